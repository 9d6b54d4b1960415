package provider_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"hookbox/provider"
)

// The providers' own vectors, signed again: each valid case's body, signed
// with its secret at the time its signature was made, gets the case's
// signature (every entry this signer writes is one of the case's entries,
// for a case signed with several secrets), wherever the scheme is
// deterministic (all of signatures.json's).
func TestSign_Vectors(t *testing.T) {
	// Cases whose signature this signer makes in another, equally valid,
	// form, and why.
	other := map[string]string{
		"mp_payment_valid": "signed with ts in seconds, as the docs' example; the signer writes milliseconds, as sdk-go reads them (mp_order_valid is such a case)",
	}
	n := 0
	for _, c := range loadVectors(t) {
		if !c.ExpectValid {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			if why, ok := other[c.Name]; ok {
				t.Skip(why)
			}
			o := vectorOptions(t, c)
			if c.Provider == "svix" {
				// Svix's header names are those clerk and resend send.
				o.Scheme = "clerk"
			}
			s, err := provider.NewSigner(o)
			if err != nil {
				t.Fatal(err)
			}
			r := c.request()
			want := r.Header.Clone()
			if err := s.Sign(r, signedAt(t, c)); err != nil {
				t.Fatal(err)
			}
			compared := 0
			for name, vals := range r.Header {
				wantVals, ok := want[name]
				if !ok {
					continue // a header the case does not carry (GitHub's SHA-1 one)
				}
				got, wantTokens := tokens(vals[0]), tokens(wantVals[0])
				for _, tok := range got {
					if !slices.Contains(wantTokens, tok) {
						t.Errorf("%s: %q, want the case's %q", name, vals[0], wantVals[0])
						break
					}
				}
				compared++
			}
			if compared == 0 {
				t.Fatalf("signed headers %v: none is one of the case's", r.Header)
			}
			if want := c.URL; want != nil && r.URL != *want {
				t.Errorf("URL %q, want the case's %q", r.URL, *want)
			}
			if err := verifyCase(mustNew(t, vectorOptions(t, c)), c); err != nil {
				t.Errorf("the case itself: %v", err)
			}
		})
		n++
	}
	if n < 20 {
		t.Fatalf("%d valid vectors, want the file's 20 or more", n)
	}
}

// tokens splits a signature header into its entries and their parts.
func tokens(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' || r == ' ' })
}

// signedAt is when a case was signed: the timestamp its headers carry,
// else its receiver's clock.
func signedAt(t *testing.T, c vector) time.Time {
	t.Helper()
	h := c.header()
	for _, name := range []string{"Webhook-Timestamp", "Svix-Timestamp", "X-Slack-Request-Timestamp"} {
		if v := h.Get(name); v != "" {
			return unixAt(t, v)
		}
	}
	for _, name := range []string{"Stripe-Signature", "Paddle-Signature", "X-Signature"} {
		for _, entry := range tokens(h.Get(name)) {
			if v, ok := strings.CutPrefix(entry, "t="); ok {
				return unixAt(t, v)
			}
			if v, ok := strings.CutPrefix(entry, "ts="); ok {
				return unixAt(t, v)
			}
		}
	}
	return time.Unix(c.NowUnix, 0)
}

// unixAt reads decimal Unix seconds, or milliseconds from 10^11 on.
func unixAt(t *testing.T, v string) time.Time {
	t.Helper()
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("timestamp %q: %v", v, err)
	}
	if n >= 1e11 {
		return time.UnixMilli(n)
	}
	return time.Unix(n, 0)
}

func TestNewSigner_Refuses(t *testing.T) {
	edPub, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	ecPriv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecPubDER, _ := x509.MarshalPKIXPublicKey(&ecPriv.PublicKey)
	ecP384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p384DER, _ := x509.MarshalECPrivateKey(ecP384)
	for _, c := range []struct {
		name string
		o    provider.Options
		want string // in the error
	}{
		{"no scheme", provider.Options{}, "no scheme"},
		{"unknown", provider.Options{Scheme: "paypal", Secrets: []string{"s"}}, "unknown scheme"},
		{"no secret", provider.Options{Scheme: "stripe"}, "no secret"},
		{"empty secret", provider.Options{Scheme: "github", Secrets: []string{""}}, "no secret"},
		{"hmac without header", provider.Options{Scheme: "hmac", Secrets: []string{"s"}}, "no header"},
		{"hmac algorithm", provider.Options{Scheme: "hmac", Header: "X-Sig", Algorithm: "md5", Secrets: []string{"s"}}, "unknown algorithm"},
		{"hmac encoding", provider.Options{Scheme: "hmac", Header: "X-Sig", Encoding: "base32", Secrets: []string{"s"}}, "unknown encoding"},
		{"token without header", provider.Options{Scheme: "token", Secrets: []string{"s"}}, "no header"},
		{"standard not whsec", provider.Options{Scheme: "standard", Secrets: []string{"whsec_!!"}}, "whsec_"},
		{"telegram token", provider.Options{Scheme: "telegram", Secrets: []string{"has space"}}, "secret_token"},
		{"postmark not user:password", provider.Options{Scheme: "postmark", Secrets: []string{"pm-secret-only"}}, "user:password"},
		{"discord public key", provider.Options{Scheme: "discord", Secrets: []string{hex.EncodeToString(edPub)}}, "cannot sign"},
		{"discord not a key", provider.Options{Scheme: "discord", Secrets: []string{"zz"}}, "Ed25519 private key"},
		{"discord torn key", provider.Options{Scheme: "discord", Secrets: []string{hex.EncodeToString(edPriv[:32]) + strings.Repeat("00", 32)}}, "public key of the first"},
		{"sendgrid public key", provider.Options{Scheme: "sendgrid", Secrets: []string{base64.StdEncoding.EncodeToString(ecPubDER)}}, "cannot sign"},
		{"sendgrid P-384", provider.Options{Scheme: "sendgrid", Secrets: []string{base64.StdEncoding.EncodeToString(p384DER)}}, "P-256"},
		{"sendgrid not a key", provider.Options{Scheme: "sendgrid", Secrets: []string{"bm90IGEga2V5"}}, "not a private key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := provider.NewSigner(c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("NewSigner: %v, want an error saying %q", err, c.want)
			}
			for _, s := range c.o.Secrets {
				if len(s) > 3 && strings.Contains(err.Error(), s) {
					t.Errorf("error %q quotes the secret", err)
				}
			}
		})
	}
	t.Run("none signs nothing", func(t *testing.T) {
		s, err := provider.NewSigner(provider.Options{Scheme: "none"})
		if err != nil {
			t.Fatal(err)
		}
		r := &provider.Request{Method: "POST", URL: "http://h/x", Body: []byte("{}")}
		if err := s.Sign(r, time.Now()); err != nil || len(r.Header) != 0 {
			t.Fatalf("Sign: %v, headers %v; want nothing set", err, r.Header)
		}
	})
}

// The key-pair schemes sign with a private key given in any of its usual
// forms, and say which public key verifies them.
func TestNewSigner_PrivateKeys(t *testing.T) {
	edPub, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(edPriv)
	ecPriv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	sec1, _ := x509.MarshalECPrivateKey(ecPriv)
	ecPKCS8, _ := x509.MarshalPKCS8PrivateKey(ecPriv)
	ecPubDER, _ := x509.MarshalPKIXPublicKey(&ecPriv.PublicKey)
	pemOf := func(typ string, der []byte) string {
		return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
	}
	for _, c := range []struct {
		scheme, secret, public string
	}{
		{"discord", hex.EncodeToString(edPriv), hex.EncodeToString(edPub)},
		{"discord", pemOf("PRIVATE KEY", pkcs8), hex.EncodeToString(edPub)},
		{"sendgrid", pemOf("EC PRIVATE KEY", sec1), base64.StdEncoding.EncodeToString(ecPubDER)},
		{"sendgrid", pemOf("PRIVATE KEY", ecPKCS8), base64.StdEncoding.EncodeToString(ecPubDER)},
		{"sendgrid", base64.StdEncoding.EncodeToString(sec1), base64.StdEncoding.EncodeToString(ecPubDER)},
	} {
		s, err := provider.NewSigner(provider.Options{Scheme: c.scheme, Secrets: []string{c.secret}})
		if err != nil {
			t.Fatalf("%s: %v", c.scheme, err)
		}
		if s.PublicKey() != c.public {
			t.Errorf("%s: PublicKey %q, want %q", c.scheme, s.PublicKey(), c.public)
		}
		now := time.Now()
		r := &provider.Request{Method: "POST", URL: "http://h/x", Header: http.Header{}, Body: []byte(`{"id":"1","type":2}`)}
		if err := s.Sign(r, now); err != nil {
			t.Fatal(err)
		}
		v := mustNew(t, provider.Options{Scheme: c.scheme, Secrets: []string{c.public}})
		if err := v.Verify(r.Header, r.Body, now); err != nil {
			t.Errorf("%s: signed request refused: %v", c.scheme, err)
		}
	}
	if s, _ := provider.NewSigner(provider.Options{Scheme: "stripe", Secrets: []string{"whsec_x"}}); s.PublicKey() != "" {
		t.Errorf("stripe has a public key %q", s.PublicKey())
	}
}

func TestSetHeaders(t *testing.T) {
	lookup := func(name string) provider.Provider {
		p, ok := provider.Lookup(name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		return p
	}
	set := func(name string, o provider.Options, e provider.Event) http.Header {
		h := http.Header{}
		lookup(name).SetHeaders(o, h, e)
		return h
	}
	e := provider.Event{ID: "evt_1", Type: "thing.done", Attempt: 1}
	if h := set("github", provider.Options{}, e); h.Get("X-GitHub-Delivery") != "evt_1" || h.Get("X-GitHub-Event") != "thing.done" {
		t.Errorf("github: %v, want the id and type headers", h)
	}
	if h := set("stripe", provider.Options{}, e); len(h) != 0 {
		t.Errorf("stripe: %v, want nothing: its id and type are the body's", h)
	}
	if h := set("clerk", provider.Options{}, e); h.Get("Svix-Id") != "evt_1" || h.Get("Webhook-Id") != "" {
		t.Errorf("clerk: %v, want svix-id alone", h)
	}
	if h := set("standard", provider.Options{}, e); h.Get("Webhook-Id") != "evt_1" {
		t.Errorf("standard: %v, want webhook-id", h)
	}
	// A source's own locations win over the preset's.
	o := provider.Options{EventID: "header:X-Event-Id", EventType: "json:kind"}
	if h := set("hmac", o, e); h.Get("X-Event-Id") != "evt_1" || len(h) != 1 {
		t.Errorf("hmac with event_id header:X-Event-Id: %v", h)
	}
	if h := set("sentry", provider.Options{EventID: "body-sha256"}, e); h.Get("Request-Id") != "evt_1" || h.Get("Sentry-Hook-Resource") != "thing.done" {
		t.Errorf("sentry with event_id body-sha256: %v, want its Request-ID and type all the same", h)
	}
	retry := e
	retry.Attempt = 3
	if h := set("slack", provider.Options{}, retry); h.Get("X-Slack-Retry-Num") != "2" || h.Get("X-Slack-Retry-Reason") == "" {
		t.Errorf("slack's third attempt: %v, want X-Slack-Retry-Num 2", h)
	}
	if h := set("slack", provider.Options{}, e); h.Get("X-Slack-Retry-Num") != "" {
		t.Errorf("slack's first attempt: %v, want no retry headers", h)
	}
	// Sentry sends a new Request-ID with each attempt; the same attempt
	// always gets the same one.
	first, again, second := set("sentry", provider.Options{}, e), set("sentry", provider.Options{}, retry), set("sentry", provider.Options{}, retry)
	if first.Get("Request-Id") != "evt_1" || again.Get("Request-Id") == "evt_1" || again.Get("Request-Id") != second.Get("Request-Id") {
		t.Errorf("sentry Request-ID: first %q, third attempt %q and %q", first.Get("Request-Id"), again.Get("Request-Id"), second.Get("Request-Id"))
	}
	if h := set("twitch", provider.Options{}, retry); h.Get("Twitch-Eventsub-Message-Type") != "notification" || h.Get("Twitch-Eventsub-Message-Retry") != "2" {
		t.Errorf("twitch: %v", h)
	}
}

// The schemes whose signature is in the body, or signs a field of it,
// change that member and keep every other byte.
func TestSign_BodyMembers(t *testing.T) {
	now := time.Unix(1700000000, 0)
	t.Run("linear", func(t *testing.T) {
		s, _ := provider.NewSigner(provider.Options{Scheme: "linear", Secrets: []string{"k"}})
		for body, want := range map[string]string{
			`{"type":"Issue", "webhookTimestamp": 1, "data":{}}`: `{"type":"Issue", "webhookTimestamp": 1700000000000, "data":{}}`,
			`{"type":"Issue"}`: `{"webhookTimestamp":1700000000000,"type":"Issue"}`,
			`{}`:               `{"webhookTimestamp":1700000000000}`,
			`{"webhookTimestamp":1,"webhookTimestamp":2}`: `{"webhookTimestamp":1,"webhookTimestamp":1700000000000}`,
		} {
			r := &provider.Request{Body: []byte(body)}
			if err := s.Sign(r, now); err != nil || string(r.Body) != want {
				t.Errorf("%s: %s, %v; want %s", body, r.Body, err, want)
			}
		}
		for _, body := range []string{`[]`, `{"a":1} {}`, `nope`, ``} {
			if err := s.Sign(&provider.Request{Body: []byte(body)}, now); err == nil {
				t.Errorf("%q signed, want an error: not a JSON object", body)
			}
		}
	})
	t.Run("mailgun", func(t *testing.T) {
		s, _ := provider.NewSigner(provider.Options{Scheme: "mailgun", Secrets: []string{"key"}})
		v := mustNew(t, provider.Options{Scheme: "mailgun", Secrets: []string{"key"}})
		body := `{"signature":{"timestamp":"1699999990","token":"tok1","signature":""},"event-data":{"event":"delivered"}}`
		r := &provider.Request{Body: []byte(body)}
		if err := s.Sign(r, now); err != nil {
			t.Fatal(err)
		}
		sig := hex.EncodeToString(mac(sha256.New, []byte("key"), "1699999990", "tok1"))
		if want := `{"signature":{"timestamp":"1699999990","token":"tok1","signature":"` + sig + `"},"event-data":{"event":"delivered"}}`; string(r.Body) != want {
			t.Fatalf("body %s\nwant %s", r.Body, want)
		}
		if err := v.Verify(nil, r.Body, now); err != nil {
			t.Fatal(err)
		}
		// Signed again, a later attempt carries the same block.
		again := &provider.Request{Body: r.Body}
		if err := s.Sign(again, now.Add(time.Hour)); err != nil || string(again.Body) != string(r.Body) {
			t.Errorf("second signature changed the body: %s", again.Body)
		}
		// Without a signature object, one is made: the same for the same body.
		bare := []byte(`{"event-data":{"event":"opened"}}`)
		a, b := &provider.Request{Body: bare}, &provider.Request{Body: bare}
		if err := errors.Join(s.Sign(a, now), s.Sign(b, now)); err != nil || string(a.Body) != string(b.Body) {
			t.Errorf("bare body: %s and %s, %v", a.Body, b.Body, err)
		}
		if err := v.Verify(nil, a.Body, now); err != nil {
			t.Error(err)
		}
	})
	t.Run("twilio JSON", func(t *testing.T) {
		s, _ := provider.NewSigner(provider.Options{Scheme: "twilio", Secrets: []string{"tok"}})
		r := &provider.Request{Method: "POST", URL: "https://h.example.com/t?x=1", Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"a":1}`)}
		if err := s.Sign(r, now); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(r.Body)
		if want := "https://h.example.com/t?x=1&bodySHA256=" + hex.EncodeToString(sum[:]); r.URL != want {
			t.Errorf("URL %q, want %q", r.URL, want)
		}
		v := mustNew(t, provider.Options{Scheme: "twilio", Secrets: []string{"tok"}}).(provider.RequestVerifier)
		if err := v.VerifyRequest(r, now); err != nil {
			t.Error(err)
		}
	})
}
