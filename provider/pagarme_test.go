package provider_test

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"hash"
	"net/http"
	"strings"
	"testing"

	"hookbox/provider"
)

func TestPagarme_Verify(t *testing.T) {
	const old, cur = "ak_test_old", "ak_test_new"
	body := []byte("id=406483&event=transaction_status_changed&current_status=paid")
	v := mustNew(t, provider.Options{Scheme: "pagarme", Secrets: []string{old, cur}})
	sig := func(fn func() hash.Hash, secret string) string {
		return hex.EncodeToString(mac(fn, []byte(secret), string(body)))
	}
	for _, tt := range []struct {
		name, header string
		want         error
	}{
		{"SHA-1", "sha1=" + sig(sha1.New, cur), nil},
		{"SHA-256", "sha256=" + sig(sha256.New, cur), nil},
		{"Old key still configured", "sha1=" + sig(sha1.New, old), nil},
		{"Missing", "", provider.ErrMissing},
		{"No prefix", sig(sha1.New, cur), provider.ErrMalformed},
		{"SHA-512 is not accepted", "sha512=" + sig(sha512.New, cur), provider.ErrMalformed},
		{"Prefix names another algorithm", "sha256=" + sig(sha1.New, cur), provider.ErrMalformed},
		{"Upper-case hex", "sha1=" + strings.ToUpper(sig(sha1.New, cur)), provider.ErrMalformed},
		{"Upper-case prefix", "SHA1=" + sig(sha1.New, cur), provider.ErrMalformed},
		{"Other key", "sha1=" + sig(sha1.New, "ak_test_other"), provider.ErrMismatch},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.header != "" {
				h.Set("X-Hub-Signature", tt.header)
			}
			wantErr(t, v.Verify(h, body, testNow), tt.want, old, cur, tt.header)
		})
	}
}

func FuzzPagarme(f *testing.F) {
	v, cases, signed, secrets := fuzzSetup(f, "pagarme", provider.Options{Scheme: "pagarme"})
	for _, c := range cases {
		f.Add(c.Headers["X-Hub-Signature"], []byte(c.Body))
	}
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		h := http.Header{}
		h.Set("X-Hub-Signature", sig)
		checkFuzz(t, v.Verify(h, body, testNow), body, signed, secrets)
	})
}
