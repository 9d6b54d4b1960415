package provider_test

import (
	"encoding/base64"
	"net/http"
	"slices"
	"strings"
	"testing"

	"hookbox/provider"
)

func basicAuth(cred string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(cred))
}

func TestVerify_Postmark(t *testing.T) {
	v := mustNew(t, provider.Options{Scheme: "postmark", Secrets: []string{"hook:old-pass", "hook:new-pass"}})
	tests := []struct {
		name, auth string
		want       error
	}{
		{"Current password", basicAuth("hook:new-pass"), nil},
		{"Older password", basicAuth("hook:old-pass"), nil},
		{"Scheme in upper case", "BASIC " + base64.StdEncoding.EncodeToString([]byte("hook:new-pass")), nil},
		{"Other user", basicAuth("other:new-pass"), provider.ErrMismatch},
		{"Password only", basicAuth("new-pass"), provider.ErrMismatch},
		{"Password with a byte more", basicAuth("hook:new-pass "), provider.ErrMismatch},
		{"Bearer", "Bearer hook:new-pass", provider.ErrMalformed},
		{"No credentials", "Basic", provider.ErrMalformed},
		{"Not base64", "Basic hook:new-pass", provider.ErrMalformed},
		{"Too long", "Basic " + strings.Repeat("QUFB", 2000), provider.ErrMalformed},
		{"Missing", "", provider.ErrMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.auth != "" {
				h.Set("Authorization", tt.auth)
			}
			// The body is not signed: any body is as good as another.
			wantErr(t, v.Verify(h, []byte("anything"), testNow), tt.want, "old-pass", "new-pass")
		})
	}
}

func TestNew_PostmarkSecret(t *testing.T) {
	p, _ := provider.Lookup("postmark")
	for _, s := range []string{"no-colon", ":password-without-user"} {
		if err := p.CheckSecret(s); err == nil || strings.Contains(err.Error(), s) {
			t.Errorf("CheckSecret(%q) = %v, want an error that does not quote it", s, err)
		}
		if _, err := provider.New(provider.Options{Scheme: "postmark", Secrets: []string{s}}); err == nil {
			t.Errorf("New with secret %q: no error", s)
		}
	}
	for _, s := range []string{"user:password", "user:", "user:pa:ss"} {
		if err := p.CheckSecret(s); err != nil {
			t.Errorf("CheckSecret(%q) = %v, want nil", s, err)
		}
	}
}

// FuzzPostmark: a request is verified exactly when its Authorization is
// Basic credentials equal to a configured secret.
func FuzzPostmark(f *testing.F) {
	cases := loadVectorFile(f, "postmark.json")
	var secrets []string
	for _, c := range cases {
		if !slices.Contains(secrets, c.Secret) {
			secrets = append(secrets, c.Secret)
		}
		f.Add(c.Headers["Authorization"])
	}
	f.Add("basic   " + base64.StdEncoding.EncodeToString([]byte(secrets[0])) + "  ")
	v := mustNew(f, provider.Options{Scheme: "postmark", Secrets: secrets})
	f.Fuzz(func(t *testing.T, auth string) {
		h := http.Header{}
		h.Set("Authorization", auth)
		err := v.Verify(h, nil, testNow)
		checkErr(t, err, secrets...)
		scheme, b64, _ := strings.Cut(h.Get("Authorization"), " ")
		cred, decErr := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
		valid := strings.EqualFold(scheme, "basic") && decErr == nil && slices.Contains(secrets, string(cred))
		if (err == nil) != valid {
			t.Fatalf("Authorization %q: err=%v, want valid=%t", auth, err, valid)
		}
	})
}
