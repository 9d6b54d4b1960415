package provider_test

import (
	"crypto/sha1"
	"testing"
)

func TestVerify_Vercel(t *testing.T) {
	checkBodyHMAC(t, "vercel", "x-vercel-signature", "", sha1.New)
}
