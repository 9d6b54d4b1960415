package provider_test

import (
	"crypto/sha1"
	"testing"
)

func TestVerify_Intercom(t *testing.T) {
	checkBodyHMAC(t, "intercom", "X-Hub-Signature", "sha1=", sha1.New)
}
