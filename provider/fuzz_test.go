package provider_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"hookbox/provider"
)

// fuzzSetup builds one verifier holding every secret of a provider's cases,
// and the bodies its valid cases sign. The fuzz property is that a body the
// sender never signed is never accepted, whatever the headers say.
func fuzzSetup(f *testing.F, name string, o provider.Options) (provider.Verifier, []vector, [][]byte, []string) {
	f.Helper()
	cases := vectorsOf(f, name)
	var signed [][]byte
	var secrets []string
	for _, c := range cases {
		if !slices.Contains(secrets, c.Secret) {
			secrets = append(secrets, c.Secret)
		}
		if c.ExpectValid {
			signed = append(signed, []byte(c.Body))
		}
	}
	o.Secrets = secrets
	return mustNew(f, o), cases, signed, secrets
}

func checkFuzz(t *testing.T, err error, body []byte, signed [][]byte, secrets []string) {
	t.Helper()
	if err == nil && !slices.ContainsFunc(signed, func(b []byte) bool { return string(b) == string(body) }) {
		t.Fatalf("Verify accepted body %q, which no seed signed", body)
	}
	checkErr(t, err, secrets...)
}

func FuzzStripe(f *testing.F) {
	v, cases, signed, secrets := fuzzSetup(f, "stripe", provider.Options{Scheme: "stripe"})
	for _, c := range cases {
		f.Add(c.Headers["Stripe-Signature"], []byte(c.Body), c.NowUnix)
	}
	f.Add("t=99999999999999999999,v1=", []byte("{}"), int64(0))
	f.Fuzz(func(t *testing.T, sig string, body []byte, now int64) {
		h := http.Header{}
		h.Set("Stripe-Signature", sig)
		checkFuzz(t, v.Verify(h, body, time.Unix(now, 0)), body, signed, secrets)
	})
}

func FuzzStandard(f *testing.F) {
	v, cases, signed, secrets := fuzzSetup(f, "standard-webhooks", provider.Options{Scheme: "standard"})
	for _, c := range append(cases, vectorsOf(f, "svix")...) {
		hv := func(name string) string { return c.Headers["webhook-"+name] + c.Headers["svix-"+name] }
		f.Add(hv("id"), hv("timestamp"), hv("signature"), []byte(c.Body), c.NowUnix)
	}
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte, now int64) {
		h := http.Header{}
		h.Set("Webhook-Id", id)
		h.Set("Webhook-Timestamp", ts)
		h.Set("Webhook-Signature", sig)
		checkFuzz(t, v.Verify(h, body, time.Unix(now, 0)), body, signed, secrets)
	})
}

func FuzzSlack(f *testing.F) {
	v, cases, signed, secrets := fuzzSetup(f, "slack", provider.Options{Scheme: "slack"})
	for _, c := range cases {
		f.Add(c.Headers["X-Slack-Signature"], c.Headers["X-Slack-Request-Timestamp"], []byte(c.Body), c.NowUnix)
	}
	f.Fuzz(func(t *testing.T, sig, ts string, body []byte, now int64) {
		h := http.Header{}
		h.Set("X-Slack-Signature", sig)
		h.Set("X-Slack-Request-Timestamp", ts)
		checkFuzz(t, v.Verify(h, body, time.Unix(now, 0)), body, signed, secrets)
	})
}

func FuzzGitHub(f *testing.F) {
	v, cases, signed, secrets := fuzzSetup(f, "github", provider.Options{Scheme: "github"})
	for _, c := range cases {
		f.Add(c.Headers["X-Hub-Signature-256"], []byte(c.Body))
	}
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		h := http.Header{}
		h.Set("X-Hub-Signature-256", sig)
		checkFuzz(t, v.Verify(h, body, testNow), body, signed, secrets)
	})
}

func FuzzShopify(f *testing.F) {
	v, cases, signed, secrets := fuzzAllSetup(f, "shopify")
	for _, c := range cases {
		f.Add(c.header().Get("X-Shopify-Hmac-Sha256"), c.header().Get("Shopify-Hmac-Sha256"), []byte(c.Body))
	}
	f.Fuzz(func(t *testing.T, sig, eventsSig string, body []byte) {
		h := http.Header{}
		h.Set("X-Shopify-Hmac-Sha256", sig)
		if eventsSig != "" {
			h.Set("Shopify-Hmac-Sha256", eventsSig)
		}
		checkFuzz(t, v.Verify(h, body, testNow), body, signed, secrets)
	})
}

func FuzzHMAC(f *testing.F) {
	cases := vectorsOf(f, "generic-hmac-sha256")
	// One verifier per configuration the cases use, keyed by encoding.
	verifiers := map[bool]provider.Verifier{}
	signed := map[bool][][]byte{}
	var secrets []string
	for _, c := range cases {
		o := vectorOptions(f, c)
		b64 := o.Encoding == "base64"
		if verifiers[b64] == nil {
			verifiers[b64] = mustNew(f, o)
		}
		if c.ExpectValid {
			signed[b64] = append(signed[b64], []byte(c.Body))
		}
		secrets = append(secrets, c.Secret)
		f.Add(b64, c.Headers[o.Header], []byte(c.Body))
	}
	if len(verifiers) != 2 {
		f.Fatalf("hmac configurations=%d, want 2 (hex and base64)", len(verifiers))
	}
	header := vectorOptions(f, cases[0]).Header
	f.Fuzz(func(t *testing.T, b64 bool, sig string, body []byte) {
		h := http.Header{}
		h.Set(header, sig)
		checkFuzz(t, verifiers[b64].Verify(h, body, testNow), body, signed[b64], secrets)
	})
}

func FuzzGitLab(f *testing.F) {
	v, cases, _, secrets := fuzzSetup(f, "gitlab", provider.Options{Scheme: "gitlab"})
	for _, c := range cases {
		f.Add(c.Headers["X-Gitlab-Token"])
	}
	f.Fuzz(func(t *testing.T, tok string) {
		h := http.Header{}
		h.Set("X-Gitlab-Token", tok)
		err := v.Verify(h, nil, testNow)
		// http.Header.Get returns the value as set; a token is valid only
		// when it is byte for byte a configured secret.
		if valid := slices.Contains(secrets, tok); (err == nil) != valid {
			t.Fatalf("token %q: err=%v, want valid=%t", tok, err, valid)
		}
		if err != nil && tok != "" && !strings.Contains(err.Error(), "X-Gitlab-Token") {
			t.Fatalf("error %q does not name the header", err)
		}
		checkErr(t, err, secrets...)
	})
}

// allVectorsOf returns the cases of one provider in every vector file,
// failing if there are none.
func allVectorsOf(tb testing.TB, name string) []vector {
	tb.Helper()
	var out []vector
	for _, c := range loadAllVectors(tb) {
		if c.Provider == name {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		tb.Fatalf("no vectors for provider %q", name)
	}
	return out
}

// fuzzAllSetup is fuzzSetup over every vector file.
func fuzzAllSetup(f *testing.F, name string) (provider.Verifier, []vector, [][]byte, []string) {
	f.Helper()
	cases := allVectorsOf(f, name)
	var signed [][]byte
	var secrets []string
	for _, c := range cases {
		if !slices.Contains(secrets, c.Secret) {
			secrets = append(secrets, c.Secret)
		}
		if c.ExpectValid {
			signed = append(signed, []byte(c.Body))
		}
	}
	return mustNew(f, provider.Options{Scheme: name, Secrets: secrets}), cases, signed, secrets
}
