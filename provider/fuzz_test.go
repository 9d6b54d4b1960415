package provider_test

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strconv"
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

func caseURL(c vector) string {
	if c.URL == nil {
		return ""
	}
	return *c.URL
}

// FuzzTwilio checks the form parameter and URL parsing against a plain
// reimplementation of the SDKs' signing: the verifier accepts exactly what
// the reference signs, for any URL, body and signature.
func FuzzTwilio(f *testing.F) {
	v, cases, _, secrets := fuzzAllSetup(f, "twilio")
	for _, c := range cases {
		f.Add(caseURL(c), c.Headers["X-Twilio-Signature"], []byte(c.Body))
	}
	f.Add("https://a.example/x?bodySHA256=zz&bodySHA256=", "", []byte("a=1&a=1&b"))
	f.Add("http://[::1]:8080/x", "", []byte("a=%zz"))
	f.Fuzz(func(t *testing.T, rawURL, sig string, body []byte) {
		h := http.Header{}
		h.Set("X-Twilio-Signature", sig)
		err := v.(provider.RequestVerifier).VerifyRequest(&provider.Request{Method: "POST", URL: rawURL, Header: h, Body: body}, testNow)
		want := slices.ContainsFunc(secrets, func(s string) bool { return twilioReference(s, rawURL, sig, body) })
		if (err == nil) != want {
			t.Fatalf("VerifyRequest(%q, %q, %q) = %v, reference says valid=%t", rawURL, sig, body, err, want)
		}
		checkErr(t, err, secrets...)
	})
}

// twilioReference is how twilio-python's RequestValidator.validate
// decides, written out plainly: the URL with and without its port; the
// body's hash against bodySHA256, else the body's form parameters.
func twilioReference(token, rawURL, sig string, body []byte) bool {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || strings.Contains(rawURL, "#") {
		return false
	}
	if !strings.HasPrefix(rawURL, u.Scheme+"://") || u.Opaque != "" {
		return false
	}
	if strings.ContainsAny(sig, "\r\n") {
		return false // the decoder skips newlines; a header's value has none
	}
	want, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		if want, err = base64.RawStdEncoding.DecodeString(sig); err != nil {
			return false
		}
	}
	params := ""
	if vals, _ := url.ParseQuery(u.RawQuery); strings.Contains(u.RawQuery, "bodySHA256") && vals.Has("bodySHA256") {
		sum := sha256.Sum256(body)
		if hex.EncodeToString(sum[:]) != vals.Get("bodySHA256") {
			return false
		}
	} else {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return false
		}
		keys := make([]string, 0, len(form))
		for k := range form {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			seen := map[string]bool{}
			vals := slices.Clone(form[k])
			slices.Sort(vals)
			for _, val := range vals {
				if !seen[val] {
					seen[val] = true
					params += k + val
				}
			}
		}
	}
	rest := strings.TrimPrefix(rawURL, u.Scheme+"://")
	authority := rest
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		authority = rest[:i]
	}
	userinfo, hostport := "", authority
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		userinfo, hostport = authority[:i+1], authority[i+1:]
	}
	tail := strings.TrimPrefix(rest, authority)
	host, port := hostport, ""
	if i := strings.LastIndex(hostport, ":"); i >= 0 && !strings.Contains(hostport[i:], "]") {
		host, port = hostport[:i], hostport[i+1:]
	}
	if host == "" {
		return false
	}
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	for _, candidate := range []string{u.Scheme + "://" + userinfo + host + tail, u.Scheme + "://" + userinfo + host + ":" + port + tail} {
		if hmac.Equal(mac(sha1.New, []byte(token), candidate, params), want) {
			return true
		}
	}
	return false
}

// FuzzMercadoPago checks the x-signature parsing and the manifest against
// a plain reimplementation of sdk-go's ValidateSignature: the verifier
// accepts exactly what the reference accepts.
func FuzzMercadoPago(f *testing.F) {
	v, cases, _, secrets := fuzzAllSetup(f, "mercadopago")
	for _, c := range cases {
		f.Add(c.Headers["x-signature"], c.Headers["x-request-id"], caseURL(c), c.NowUnix)
	}
	f.Add("ts=1,ts=2,v1=,v2=ab,V1=00", " ", "https://x/?data.id=%zz&data.id=1", int64(0))
	f.Add("ts=99999999999999999,v1="+zeros64, "r", "https://x/", int64(1<<62))
	f.Fuzz(func(t *testing.T, sig, requestID, rawURL string, now int64) {
		h := http.Header{}
		h.Set("X-Signature", sig)
		h.Set("X-Request-Id", requestID)
		err := v.(provider.RequestVerifier).VerifyRequest(&provider.Request{Method: "POST", URL: rawURL, Header: h}, time.Unix(now, 0))
		want := slices.ContainsFunc(secrets, func(s string) bool { return mercadoPagoReference(s, sig, requestID, rawURL, time.Unix(now, 0)) })
		if (err == nil) != want {
			t.Fatalf("VerifyRequest(%q, %q, %q, %d) = %v, reference says valid=%t", sig, requestID, rawURL, now, err, want)
		}
		checkErr(t, err, secrets...)
	})
}

// mercadoPagoReference is sdk-go's ValidateSignature with hookbox's
// tolerance (5 days, both directions; a ts below 10^11 in seconds).
func mercadoPagoReference(secret, sig, requestID, rawURL string, now time.Time) bool {
	var ts, v1 string
	for _, part := range strings.Split(strings.TrimSpace(sig), ",") {
		k, val, ok := strings.Cut(part, "=")
		k, val = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(val)
		if !ok || k == "" || val == "" {
			continue
		}
		switch k {
		case "ts":
			ts = val
		case "v1":
			v1 = val
		}
	}
	if ts == "" || v1 == "" || strings.Trim(ts, "0123456789") != "" || len(ts) > 18 {
		return false
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	if n < 1e11 {
		n *= 1000
	}
	if d := now.Sub(time.UnixMilli(n)); d > 5*24*time.Hour || d < -5*24*time.Hour {
		return false
	}
	dataID := ""
	if _, q, ok := strings.Cut(rawURL, "?"); ok {
		q, _, _ = strings.Cut(q, "#")
		vals, _ := url.ParseQuery(q)
		dataID = strings.TrimSpace(vals.Get("data.id"))
	}
	var parts []string
	if dataID != "" {
		parts = append(parts, "id:"+dataID)
	}
	if rid := strings.TrimSpace(requestID); rid != "" {
		parts = append(parts, "request-id:"+rid)
	}
	parts = append(parts, "ts:"+ts)
	return hex.EncodeToString(mac(sha256.New, []byte(secret), strings.Join(parts, ";")+";")) == v1
}

// fuzzSigned is the fuzz property of the schemes that sign the body: a
// body no case signed is never accepted.
func fuzzSigned(f *testing.F, name string, headers []string, withURL bool) {
	v, cases, signed, secrets := fuzzAllSetup(f, name)
	for _, c := range cases {
		vals := make([]string, 3)
		for i, hn := range headers {
			for k, val := range c.Headers {
				if strings.EqualFold(k, hn) {
					vals[i] = val
				}
			}
		}
		f.Add(vals[0], vals[1], vals[2], caseURL(c), []byte(c.Body), c.NowUnix)
	}
	f.Fuzz(func(t *testing.T, h0, h1, h2, rawURL string, body []byte, now int64) {
		h := http.Header{}
		for i, val := range []string{h0, h1, h2}[:len(headers)] {
			h.Set(headers[i], val)
		}
		var err error
		if withURL {
			err = v.(provider.RequestVerifier).VerifyRequest(&provider.Request{Method: "POST", URL: rawURL, Header: h, Body: body}, time.Unix(now, 0))
		} else {
			err = v.Verify(h, body, time.Unix(now, 0))
		}
		checkFuzz(t, err, body, signed, secrets)
	})
}

func FuzzSquare(f *testing.F) {
	fuzzSigned(f, "square", []string{"X-Square-Hmacsha256-Signature"}, true)
}

func FuzzHubSpot(f *testing.F) {
	fuzzSigned(f, "hubspot", []string{"X-Hubspot-Signature-V3", "X-Hubspot-Request-Timestamp"}, true)
}

func FuzzZoom(f *testing.F) {
	fuzzSigned(f, "zoom", []string{"X-Zm-Signature", "X-Zm-Request-Timestamp"}, false)
}

func FuzzTwitch(f *testing.F) {
	fuzzSigned(f, "twitch", []string{"Twitch-Eventsub-Message-Signature", "Twitch-Eventsub-Message-Timestamp", "Twitch-Eventsub-Message-Id"}, false)
}

func FuzzDiscord(f *testing.F) {
	fuzzSigned(f, "discord", []string{"X-Signature-Ed25519", "X-Signature-Timestamp"}, false)
}
