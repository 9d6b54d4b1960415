package refetch_test

import (
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"hookbox/provider"
	"hookbox/refetch"
)

var myshopify = regexp.MustCompile(`^https://[a-z0-9][a-z0-9-]*\.myshopify\.com$`)

// Whatever a refetch_url and an event hold, the URL fetched is on the
// template's own host; whatever a webhook's body and headers say, a
// preset's fetch stays below the configured base. A webhook can never
// send the credential elsewhere.
func FuzzFetchURL(f *testing.F) {
	f.Add("https://api.example.com/v1/{json:a}?q={json:b}", `{"a":"x/../../y","b":"@evil.example#"}`, "orders/updated", "evil.example")
	f.Add("http://127.0.0.1:9/{json:a}", `{"a":"//evil.example/x"}`, "issues", "x.myshopify.com")
	f.Add("https://api.example.com/{json:0.id}", `[{"id":"%2e%2e"}]`, "fulfillments/create", "")
	f.Add("https://api.example.com/x", `{"related_object":{"url":"/v1/../x"},"issue":{"url":"https://api.github.com.evil/x"}}`, "issues", "a.myshopify.com")
	f.Fuzz(func(t *testing.T, raw, body, typ, shop string) {
		if tmpl, err := refetch.ParseTemplate(raw); err == nil {
			if u, err := tmpl.Fill(nil, []byte(body)); err == nil {
				if p, err := url.Parse(u); err != nil || p.Scheme+"://"+p.Host != tmpl.Base() {
					t.Fatalf("template %q with %q fetches %q, off its base %s", raw, body, u, tmpl.Base())
				}
			}
		}
		const base = "https://api.hookbox.test"
		for _, p := range provider.All() {
			if p.Refetch == nil {
				continue
			}
			h := http.Header{"X-Shopify-Shop-Domain": {shop}}
			r, err := p.Refetch.Request(provider.FetchEvent{Type: typ, Header: h, Body: []byte(body), Base: base})
			if err != nil {
				continue
			}
			u, err := url.Parse(base + r.Path)
			if err != nil || u.Scheme+"://"+u.Host != base || r.Base != "" {
				t.Fatalf("%s: %q %q fetches %q (base %q), off the configured base", p.Name, typ, body, r.Path, r.Base)
			}
		}
		// Without a configured base, Shopify's is the shop's own host.
		shopify, _ := provider.Lookup("shopify")
		r, err := shopify.Refetch.Request(provider.FetchEvent{Type: typ, Header: http.Header{"X-Shopify-Shop-Domain": {shop}}, Body: []byte(body)})
		if err == nil {
			u, err := url.Parse(r.Base + r.Path)
			if err != nil || !myshopify.MatchString(r.Base) || u.Scheme+"://"+u.Host != r.Base {
				t.Fatalf("shopify with shop %q fetches %q%q, not a myshopify.com shop", shop, r.Base, r.Path)
			}
		}
	})
}
