package provider_test

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"net/http"
	"strings"
	"testing"

	"hookbox/provider"
)

// checkBodyHMAC tests a preset whose header is prefix and the lower-case
// hex of an HMAC of the body alone: every secret of a rotation verifies,
// a third does not, nor a changed body, upper-case hex, the digest of
// another hash, or a missing prefix.
func checkBodyHMAC(t *testing.T, scheme, header, prefix string, fn func() hash.Hash) {
	t.Helper()
	body := `{"id":"e1","type":"t"}`
	sign := func(secret string, fn func() hash.Hash) string {
		return prefix + hex.EncodeToString(mac(fn, []byte(secret), body))
	}
	v := mustNew(t, provider.Options{Scheme: scheme, Secrets: []string{"secret-old", "secret-new"}})
	other := sha256.New
	if fn().Size() == sha256.Size {
		other = sha1.New
	}
	for _, tt := range []struct {
		name, value, body string
		want              error
	}{
		{"Current secret", sign("secret-new", fn), body, nil},
		{"Older secret", sign("secret-old", fn), body, nil},
		{"Other secret", sign("secret-other", fn), body, provider.ErrMismatch},
		{"Changed body", sign("secret-new", fn), body + " ", provider.ErrMismatch},
		{"Upper-case hex", prefix + strings.ToUpper(strings.TrimPrefix(sign("secret-new", fn), prefix)), body, provider.ErrMalformed},
		{"Other hash", sign("secret-new", other), body, provider.ErrMalformed},
		{"Missing", "", body, provider.ErrMissing},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.value != "" {
				h.Set(header, tt.value)
			}
			wantErr(t, v.Verify(h, []byte(tt.body), testNow), tt.want, "secret-old", "secret-new")
		})
	}
	if prefix != "" {
		h := http.Header{}
		h.Set(header, strings.TrimPrefix(sign("secret-new", fn), prefix))
		wantErr(t, v.Verify(h, []byte(body), testNow), provider.ErrMalformed)
	}
}

func TestVerify_Sentry(t *testing.T) {
	checkBodyHMAC(t, "sentry", "Sentry-Hook-Signature", "", sha256.New)
}
