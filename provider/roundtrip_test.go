package provider_test

import (
	"bytes"
	"cmp"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"hookbox/location"
	"hookbox/provider"
)

// roundTrip is how the round-trip test signs for, and verifies, one scheme.
type roundTrip struct {
	o          provider.Options // Scheme and the settings, but for Secrets
	sign, vrfy string           // the secret signed and verified with
}

func roundTrips(t *testing.T) map[string]roundTrip {
	t.Helper()
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sec1, _ := x509.MarshalECPrivateKey(ec)
	pub, _ := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	rts := map[string]roundTrip{}
	for _, p := range provider.All() {
		secret := cmp.Or(p.SecretExample, stdSecrets[0])
		rt := roundTrip{o: provider.Options{Scheme: p.Name}, sign: secret, vrfy: secret}
		switch p.Name {
		case "discord":
			rt.sign, rt.vrfy = hex.EncodeToString(discordKeys[0]), discordPublic[0]
		case "sendgrid":
			rt.sign = string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}))
			rt.vrfy = base64.StdEncoding.EncodeToString(pub)
		case "hmac":
			rt.o.Header, rt.o.Prefix, rt.o.Algorithm, rt.o.Encoding = "X-Test-Signature", "sha256=", "sha512", "base64"
		case "token":
			rt.o.Header = "X-Test-Token"
		case "none":
			rt.sign, rt.vrfy = "", ""
		}
		rts[p.Name] = rt
	}
	return rts
}

// signedSample is a sample of p filled for an event at at, with its
// headers set and signed at at.
func signedSample(t *testing.T, p provider.Provider, rt roundTrip, s provider.Sample, id, resource string, at time.Time) *provider.Request {
	t.Helper()
	v := provider.Values{ID: id, Resource: resource, Type: s.Type, At: at, Attempt: 1}
	body, err := provider.Fill(s.Body(), v)
	if err != nil {
		t.Fatalf("%s: %v", s.File, err)
	}
	query, err := provider.Fill([]byte(s.Query), v)
	if err != nil {
		t.Fatalf("%s query: %v", s.File, err)
	}
	r := &provider.Request{Method: http.MethodPost, URL: "https://hooks.example.com/hooks/" + p.Name, Header: http.Header{}, Body: body}
	if len(query) > 0 {
		r.URL += "?" + string(query)
	}
	r.Header.Set("Content-Type", s.ContentTypeOr())
	o := rt.o
	p.SetHeaders(o, r.Header, provider.Event{ID: id, Type: s.Type, Attempt: 1})
	if rt.sign != "" {
		o.Secrets = []string{rt.sign}
	}
	signer, err := provider.NewSigner(o)
	if err != nil {
		t.Fatalf("NewSigner: %v", err)
	}
	if err := signer.Sign(r, at); err != nil {
		t.Fatalf("Sign: %v", err)
	}
	return r
}

// verifySigned checks r as the receiver does.
func verifySigned(t *testing.T, rt roundTrip, r *provider.Request, now time.Time) error {
	t.Helper()
	o := rt.o
	if rt.vrfy != "" {
		o.Secrets = []string{rt.vrfy}
	}
	v := mustNew(t, o)
	if rv, ok := v.(provider.RequestVerifier); ok {
		return rv.VerifyRequest(r, now)
	}
	return v.Verify(r.Header, r.Body, now)
}

// tampers are, for a scheme, changes of one byte of what it signs, each
// of which its verifier must refuse. Body: every scheme that signs the
// body's bytes.
var tampers = map[string][]string{
	"twilio": {"body", "url"}, "square": {"body", "url"}, "hubspot": {"body", "url"},
	"mercadopago": {"header:X-Request-Id", "query"},
	"gitlab":      {"header:X-Gitlab-Token"}, "asaas": {"header:Asaas-Access-Token"},
	"telegram": {"header:X-Telegram-Bot-Api-Secret-Token"}, "token": {"header:X-Test-Token"},
	"postmark": {"header:Authorization"},
	"mailgun":  {"token"},
	"standard": {"body", "header:Webhook-Id"}, "clerk": {"body", "header:Svix-Id"}, "resend": {"body", "header:Svix-Id"},
	"twitch": {"body", "header:Twitch-Eventsub-Message-Id"},
	"none":   nil,
}

// flip changes one letter or digit of s from offset on (to another of its
// kind), so the change survives any decoding of s.
func flip(s []byte, from int) []byte {
	out := bytes.Clone(s)
	for i := from; i < from+len(out); i++ {
		j := i % len(out)
		switch c := out[j]; {
		case c >= '0' && c <= '8', c >= 'a' && c <= 'y', c >= 'A' && c <= 'Y':
			out[j] = c + 1
			return out
		}
	}
	return out
}

func tamper(t *testing.T, r *provider.Request, how, id string) *provider.Request {
	t.Helper()
	c := &provider.Request{Method: r.Method, URL: r.URL, Header: r.Header.Clone(), Body: bytes.Clone(r.Body)}
	switch {
	case how == "body":
		c.Body = flip(c.Body, len(c.Body)/2)
	case how == "url":
		base, query, _ := strings.Cut(c.URL, "?")
		c.URL = string(flip([]byte(base), len(base)-1))
		if query != "" {
			c.URL += "?" + query
		}
	case how == "query":
		base, query, _ := strings.Cut(c.URL, "?")
		c.URL = base + "?" + string(flip([]byte(query), strings.Index(query, "=")+1))
	case how == "token":
		c.Body = bytes.Replace(c.Body, []byte(id), flip([]byte(id), 0), 1)
	case strings.HasPrefix(how, "header:"):
		name := strings.TrimPrefix(how, "header:")
		c.Header.Set(name, string(flip([]byte(c.Header.Get(name)), 0)))
	default:
		t.Fatalf("no tamper %q", how)
	}
	return c
}

// The registry round trip: for every scheme and every sample of it, the
// sample as the provider sends it, signed at now, passes the scheme's real
// verifier (through VerifyRequest where the scheme signs the URL); one byte
// changed of each part the scheme signs, it is refused; signed longer ago
// than the tolerance, it is refused for its timestamp; the event id,
// type, resource and version are where the preset and the sample say.
func TestRegistry_SignedSamplesVerify(t *testing.T) {
	rts := roundTrips(t)
	now := time.Now().Truncate(time.Second)
	for _, p := range provider.All() {
		t.Run(p.Name, func(t *testing.T) {
			rt := rts[p.Name]
			if len(p.Samples) == 0 {
				t.Fatal("no samples")
			}
			ways, ok := tampers[p.Name]
			if !ok {
				ways = []string{"body"}
			}
			if !p.Unsigned && len(ways) == 0 {
				t.Fatal("a signed scheme with nothing to tamper with")
			}
			for _, s := range p.Samples {
				t.Run(cmp.Or(s.Type, s.File), func(t *testing.T) {
					if s.Body() == nil {
						t.Fatalf("no sample file %s", s.File)
					}
					r := signedSample(t, p, rt, s, s.ID, s.Resource, now)
					if err := verifySigned(t, rt, r, now); err != nil {
						t.Fatalf("signed sample refused: %v\n%s %s\n%v\n%s", err, r.Method, r.URL, r.Header, r.Body)
					}
					for _, how := range ways {
						err := verifySigned(t, rt, tamper(t, r, how, s.ID), now)
						if err == nil {
							t.Errorf("one byte of the %s changed: still accepted", how)
						}
						checkErr(t, err, rt.sign, rt.vrfy)
					}
					if p.Tolerance > 0 {
						old := now.Add(-p.Tolerance - time.Minute)
						err := verifySigned(t, rt, signedSample(t, p, rt, s, s.ID, s.Resource, old), now)
						if !errors.Is(err, provider.ErrTimestamp) {
							t.Errorf("signed %s ago: %v, want ErrTimestamp", p.Tolerance+time.Minute, err)
						}
					}
					checkLocations(t, p, rt, s, r, now)
					// Another event is another event id, also where the id is
					// the body's hash: another event of the resource, a minute
					// older (out-of-order's), or of another resource.
					newID, newRes := string(flip([]byte(s.ID), len(s.ID)-1)), string(flip([]byte(s.Resource), len(s.Resource)-1))
					for what, other := range map[string]*provider.Request{
						"older event":               signedSample(t, p, rt, s, newID, s.Resource, now.Add(-time.Minute)),
						"event of another resource": signedSample(t, p, rt, s, newID, newRes, now),
					} {
						if a, b := eventID(t, p, rt, r), eventID(t, p, rt, other); a == b {
							t.Errorf("an %s has the same event id %q", what, a)
						}
					}
				})
			}
		})
	}
	for _, name := range []string{"stripe", "github", "shopify"} {
		if p, _ := provider.Lookup(name); len(p.Samples) < 2 {
			t.Errorf("%s has %d samples, want two", name, len(p.Samples))
		}
	}
}

func eventID(t *testing.T, p provider.Provider, rt roundTrip, r *provider.Request) string {
	t.Helper()
	loc, err := location.Parse(cmp.Or(rt.o.EventID, p.EventID, "json:id"), location.ID)
	if err != nil {
		t.Fatal(err)
	}
	id, err := loc.Find(&location.Request{Header: r.Header, Body: r.Body})
	if err != nil {
		t.Fatalf("event id: %v", err)
	}
	return id
}

// checkLocations: the id and type are where the preset reads them, and the
// resource and version where the sample says.
func checkLocations(t *testing.T, p provider.Provider, rt roundTrip, s provider.Sample, r *provider.Request, at time.Time) {
	t.Helper()
	find := func(spec string, f location.Field) string {
		t.Helper()
		loc, err := location.Parse(spec, f)
		if err != nil {
			t.Fatalf("%q: %v", spec, err)
		}
		v, err := loc.Find(&location.Request{Header: r.Header, Body: r.Body})
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		return v
	}
	id := eventID(t, p, rt, r)
	if spec := cmp.Or(p.EventID, "json:id"); !strings.HasPrefix(spec, "body-sha256") && id != s.ID {
		t.Errorf("event id at %s: %q, want the event's %q", spec, id, s.ID)
	}
	if p.EventType != "" && s.Type != "" {
		if got := find(p.EventType, location.Type); got != s.Type {
			t.Errorf("type at %s: %q, want %q", p.EventType, got, s.Type)
		}
	}
	if s.Key != "" {
		if got := find(s.Key, location.ID); !strings.Contains(got, s.Resource) {
			t.Errorf("resource at %s: %q, want it to hold %q", s.Key, got, s.Resource)
		}
	}
	if s.Version != "" {
		got := find(s.Version, location.ID)
		n, err := strconv.ParseInt(got, 10, 64)
		ok := err == nil && (n == at.Unix() || n == at.UnixMilli())
		if tm, err := time.Parse(time.RFC3339, got); err == nil {
			ok = tm.Equal(at)
		}
		if !ok {
			t.Errorf("version at %s: %q, want the event's time %s", s.Version, got, at.UTC().Format(time.RFC3339))
		}
	}
}

// Each delivery of a scheme that signs a time is signed at its own time:
// signed again a moment later, the request carries a later timestamp.
// (Mailgun's timestamp is the event's, in the body, kept by its retries.)
func TestRegistry_FreshTimestamps(t *testing.T) {
	rts := roundTrips(t)
	now := time.Now().Truncate(time.Second)
	for _, p := range provider.All() {
		if p.Tolerance == 0 || p.Name == "mailgun" {
			continue
		}
		rt, s := rts[p.Name], p.Samples[0]
		a := signedSample(t, p, rt, s, s.ID, s.Resource, now)
		o := rt.o
		o.Secrets = []string{rt.sign}
		signer, _ := provider.NewSigner(o)
		b := &provider.Request{Method: a.Method, URL: a.URL, Header: a.Header.Clone(), Body: bytes.Clone(a.Body)}
		if err := signer.Sign(b, now.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := verifySigned(t, rt, b, now.Add(2*time.Second)); err != nil {
			t.Errorf("%s: signed again: %v", p.Name, err)
		}
		same := bytes.Equal(a.Body, b.Body)
		for name := range b.Header {
			same = same && a.Header.Get(name) == b.Header.Get(name)
		}
		if same {
			t.Errorf("%s: signed 2 s later, the request is the same", p.Name)
		}
	}
}

func TestFill(t *testing.T) {
	at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	v := provider.Values{ID: "evt_1", Resource: "pi_2", Type: "x.y", At: at, Attempt: 3}
	got, err := provider.Fill([]byte(`{{id}} {{resource}} {{type}} {{version}} {{now}} {{now_unix}} {{now_ms}} {{attempt}} {{retry}} {}`), v)
	if want := "evt_1 pi_2 x.y 1714979289 2024-05-06T07:08:09Z 1714979289 1714979289000 3 2 {}"; err != nil || string(got) != want {
		t.Fatalf("Fill: %q, %v; want %q", got, err, want)
	}
	for _, bad := range []string{`{{idx}}`, `{{ id }}`, `{{id`} {
		if _, err := provider.Fill([]byte(bad), v); err == nil {
			t.Errorf("Fill(%q): no error", bad)
		}
	}
}

func TestRetries(t *testing.T) {
	for _, p := range provider.All() {
		r := p.Retries
		if r.Note == "" {
			t.Errorf("%s: retries without a note of where they come from", p.Name)
		}
		for _, d := range r.Delays {
			if d < 0 || d > 3*24*time.Hour {
				t.Errorf("%s: a retry delay of %s", p.Name, d)
			}
		}
		if r.Total() > 5*24*time.Hour {
			t.Errorf("%s: retries over %s", p.Name, r.Total())
		}
		if p.Timeout == 0 && p.TimeoutNote == "" {
			t.Errorf("%s: no timeout, and no note saying why", p.Name)
		}
	}
	// A span the provider gives is what its approximation adds up to.
	for name, want := range map[string]time.Duration{"shopify": 4 * time.Hour, "paddle": 72 * time.Hour, "square": 24 * time.Hour, "hubspot": 24 * time.Hour} {
		p, _ := provider.Lookup(name)
		if got := p.Retries.Total(); got < want-time.Hour || got > want {
			t.Errorf("%s: retries over %s, want about %s", name, got, want)
		}
	}
}
