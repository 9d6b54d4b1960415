package config_test

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"hookbox/config"
	"hookbox/provider"
)

// minimalSource is the least a [[source]] of p needs to validate, found
// from the registry alone.
func minimalSource(p provider.Provider) string {
	doc := fmt.Sprintf("[[source]]\nname = \"s\"\nverify = %q\n", p.Name)
	if p.Unsigned {
		doc += "insecure = true\n"
	} else {
		doc += fmt.Sprintf("secret = %q\n", cmp.Or(p.SecretExample, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
	}
	if p.Header != "" {
		doc += "header = \"X-Sig\"\n"
	}
	if p.EventID == "" {
		doc += "event_id = \"body-sha256\"\n"
	}
	return doc
}

// The schemes verify accepts are exactly the registry's: each provider
// validates, the preset defaults are the registry's, and the list a bad
// verify is told to choose from is provider.Names() in its order.
func TestParse_SchemesAreTheRegistry(t *testing.T) {
	for _, p := range provider.All() {
		t.Run(p.Name, func(t *testing.T) {
			cfg, err := config.Parse("c.toml", []byte(minimalSource(p)), env(nil))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			s := cfg.Sources[0]
			if p.EventID != "" && s.EventID != p.EventID {
				t.Errorf("event_id = %q, want the provider's %q", s.EventID, p.EventID)
			}
			if s.EventType != p.EventType {
				t.Errorf("event_type = %q, want the provider's %q", s.EventType, p.EventType)
			}
			for _, set := range p.Settings {
				if set.Choices == nil {
					continue
				}
				got := map[string]string{"algorithm": s.Algorithm, "encoding": s.Encoding}[set.Key]
				if got != set.Choices[0] {
					t.Errorf("%s = %q, want the default %q", set.Key, got, set.Choices[0])
				}
			}
		})
	}

	for _, bad := range []string{"stirpe", "Stripe", "standard-webhooks", "svix", "paddle-classic", "hmac-sha256"} {
		doc := "[[source]]\nname = \"s\"\nverify = \"" + bad + "\"\nsecret = \"k\"\n"
		_, err := config.Parse("c.toml", []byte(doc), env(nil))
		ps := problems(t, err)
		if len(ps) != 1 || ps[0].Field != "source[s].verify" {
			t.Fatalf("verify = %q: got %v, want one problem naming source[s].verify", bad, err)
		}
		_, list, ok := strings.Cut(ps[0].Msg, "want one of ")
		if !ok {
			t.Fatalf("verify = %q: message %q does not list the schemes", bad, ps[0].Msg)
		}
		if got := strings.Split(strings.TrimSuffix(list, ")"), ", "); !slices.Equal(got, provider.Names()) {
			t.Fatalf("verify = %q: listed %v, want the registry's %v", bad, got, provider.Names())
		}
	}
}

// The keys a scheme does not take are refused with the schemes that do,
// as the registry says.
func TestParse_SchemeKeys(t *testing.T) {
	for _, p := range provider.All() {
		t.Run(p.Name, func(t *testing.T) {
			doc := minimalSource(p)
			want := []string{}
			if p.Header == "" {
				doc += "header = \"X-Other\"\n"
				want = append(want, "source[s].header")
			}
			for _, k := range []string{"algorithm", "encoding", "prefix"} {
				if _, ok := p.Setting(k); !ok {
					doc += k + " = \"x\"\n"
					want = append(want, "source[s]."+k)
				}
			}
			if p.Tolerance == 0 {
				doc += "tolerance = \"1m\"\n"
				want = append(want, "source[s].tolerance")
			}
			if !p.SignsURL {
				doc += "public_url = \"https://hooks.example.com/hooks/s\"\n"
				want = append(want, "source[s].public_url")
			}
			_, err := config.Parse("c.toml", []byte(doc), env(nil))
			if got := fields(problems(t, err)); !slices.Equal(got, want) {
				t.Fatalf("problems %v (%v), want %v", got, err, want)
			}
		})
	}
}

// public_url is for the schemes that sign the URL: an absolute http(s) URL
// without a query, whose password is never echoed.
func TestParse_PublicURL(t *testing.T) {
	src := func(verify, publicURL string) string {
		return fmt.Sprintf("[[source]]\nname = \"s\"\nverify = %q\nsecret = \"k\"\npublic_url = %q\n", verify, publicURL)
	}
	for _, tt := range []struct {
		name, doc, want string
	}{
		{"Twilio", src("twilio", "https://hooks.example.com/hooks/twilio"), ""},
		{"Square behind a path", src("square", "http://10.0.0.1:8080/square/in"), ""},
		{"Scheme signing none", src("github", "https://hooks.example.com/hooks/github"), `only for verify = "twilio" or "square" or "hubspot"`},
		{"Relative", src("twilio", "/hooks/twilio"), "want the absolute http:// or https:// URL"},
		{"Other scheme", src("hubspot", "ftp://hooks.example.com/x"), "want the absolute http:// or https:// URL"},
		{"With a query", src("twilio", "https://hooks.example.com/hooks/twilio?a=1"), "without its query"},
		{"With a fragment", src("twilio", "https://hooks.example.com/hooks/twilio#rc=3"), "without its query"},
		{"Password not echoed", src("twilio", "https://user:hunter2@hooks.example.com/t?x=1"), "without its query"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse("c.toml", []byte(tt.doc), env(nil))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if got := cfg.Sources[0].ProviderOptions().PublicURL; got == "" {
					t.Fatalf("ProviderOptions().PublicURL empty, want the configured URL")
				}
				return
			}
			ps := problems(t, err)
			if len(ps) != 1 || ps[0].Field != "source[s].public_url" || !strings.Contains(ps[0].Error(), tt.want) {
				t.Fatalf("got %v, want one problem naming source[s].public_url with %q", err, tt.want)
			}
			if strings.Contains(ps[0].Error(), "hunter2") {
				t.Fatalf("problem %q shows the URL's password", ps[0].Error())
			}
		})
	}
}
