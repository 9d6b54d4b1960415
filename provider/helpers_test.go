package provider_test

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"hookbox/provider"
)

// vector is one case of testdata/signatures.json.
type vector struct {
	Provider        string            `json:"provider"`
	Name            string            `json:"name"`
	Secret          string            `json:"secret"`
	Body            string            `json:"body"`
	Headers         map[string]string `json:"headers"`
	URL             *string           `json:"url"`
	Method          string            `json:"method"`
	NowUnix         int64             `json:"now_unix"`
	ExpectValid     bool              `json:"expect_valid"`
	Notes           string            `json:"notes"`
	SDKDisagreement *string           `json:"sdk_disagreement"`
	// ExpectedReply is the answer of a handshake (a request answered and
	// not stored), in the files added since signatures.json.
	ExpectedReply *struct {
		ContentType string `json:"content_type"`
		Body        string `json:"body"`
	} `json:"expected_reply"`
}

// request is the case as a RequestVerifier sees it.
func (c vector) request() *provider.Request {
	r := &provider.Request{Method: c.Method, Header: c.header(), Body: []byte(c.Body)}
	if r.Method == "" {
		r.Method = http.MethodPost
	}
	if c.URL != nil {
		r.URL = *c.URL
	}
	return r
}

// verifyCase checks a case as the receiver does: through VerifyRequest
// for a scheme that signs the URL or reads the query.
func verifyCase(v provider.Verifier, c vector) error {
	if rv, ok := v.(provider.RequestVerifier); ok {
		return rv.VerifyRequest(c.request(), time.Unix(c.NowUnix, 0))
	}
	return v.Verify(c.header(), []byte(c.Body), time.Unix(c.NowUnix, 0))
}

func (c vector) header() http.Header {
	h := http.Header{}
	for k, v := range c.Headers {
		h.Set(k, v)
	}
	return h
}

// loadVectors returns the cases of testdata/signatures.json, the
// providers' own published and computed vectors.
func loadVectors(tb testing.TB) []vector { return loadVectorFile(tb, "signatures.json") }

// loadAllVectors returns the cases of every file in testdata: the shared
// signatures.json, schemes.json (the schemes no provider publishes vectors
// for: token, none), and one file a provider added since (NAME.json).
func loadAllVectors(tb testing.TB) []vector {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no vector files in testdata: %v", err)
	}
	var all []vector
	for _, f := range files {
		all = append(all, loadVectorFile(tb, filepath.Base(f))...)
	}
	return all
}

func loadVectorFile(tb testing.TB, name string) []vector {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(b, &vs); err != nil {
		tb.Fatalf("decode %s: %v", name, err)
	}
	return vs
}

// vectorsOf returns the cases of one provider in every vector file,
// failing if there are none.
func vectorsOf(tb testing.TB, name string) []vector {
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

// notPresets are providers in the vector file that hookbox has no preset
// for: their cases are skipped, as long as the registry has no such name.
var notPresets = map[string]string{}

var (
	notesHeader   = regexp.MustCompile(`header=([A-Za-z0-9-]+)`)
	notesPrefix   = regexp.MustCompile(`prefix='([^']*)'`)
	notesEncoding = regexp.MustCompile(`encoding=(hex|base64)`)
)

// vectorScheme is the provider a case is for: its own name, but for the
// vector files' names of standard and hmac.
func vectorScheme(c vector) string {
	switch c.Provider {
	case "standard-webhooks", "svix":
		return "standard"
	case "generic-hmac-sha256":
		return "hmac"
	}
	return c.Provider
}

// vectorOptions maps a case to the hookbox options that verify it.
func vectorOptions(tb testing.TB, c vector) provider.Options {
	tb.Helper()
	o := provider.Options{Scheme: vectorScheme(c)}
	p, ok := provider.Lookup(o.Scheme)
	if !ok {
		tb.Fatalf("%s: unknown provider %q", c.Name, c.Provider)
	}
	if !p.Unsigned {
		o.Secrets = []string{c.Secret}
	}
	if p.Header != "" {
		// The cases of a scheme whose header the source names carry
		// their config in the notes, e.g. "config: header=X-Signature,
		// prefix='sha256=', encoding=hex".
		h := notesHeader.FindStringSubmatch(c.Notes)
		if h == nil {
			tb.Fatalf("%s: cannot read the header from notes %q", c.Name, c.Notes)
		}
		o.Header = h[1]
	}
	if o.Scheme == "hmac" {
		o.Algorithm = "sha256"
		pre, e := notesPrefix.FindStringSubmatch(c.Notes), notesEncoding.FindStringSubmatch(c.Notes)
		if pre == nil || e == nil {
			tb.Fatalf("%s: cannot read hmac config from notes %q", c.Name, c.Notes)
		}
		o.Prefix, o.Encoding = pre[1], e[1]
	}
	return o
}

func mustNew(tb testing.TB, o provider.Options) provider.Verifier {
	tb.Helper()
	v, err := provider.New(o)
	if err != nil {
		tb.Fatalf("New(%+v): %v", o.Scheme, err)
	}
	return v
}

var sentinels = []error{provider.ErrMissing, provider.ErrMalformed, provider.ErrMismatch, provider.ErrTimestamp}

// checkErr fails unless err wraps exactly one sentinel and its text contains
// none of the given secret or signature strings.
func checkErr(tb testing.TB, err error, leaks ...string) {
	tb.Helper()
	if err == nil {
		return
	}
	n := 0
	for _, s := range sentinels {
		if errors.Is(err, s) {
			n++
		}
	}
	if n != 1 {
		tb.Errorf("error %q wraps %d sentinels, want 1", err, n)
	}
	msg := err.Error()
	for _, l := range leaks {
		if l != "" && strings.Contains(msg, l) {
			tb.Errorf("error %q contains a secret or signature %q", msg, l)
		}
	}
}

// wantErr fails unless err matches want (nil meaning valid).
func wantErr(tb testing.TB, err, want error, leaks ...string) {
	tb.Helper()
	switch {
	case want == nil && err != nil:
		tb.Fatalf("Verify: got %v, want valid", err)
	case want != nil && !errors.Is(err, want):
		tb.Fatalf("Verify: got %v, want %v", err, want)
	}
	checkErr(tb, err, leaks...)
}

func mac(fn func() hash.Hash, key []byte, parts ...string) []byte {
	m := hmac.New(fn, key)
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return m.Sum(nil)
}

func whsecKey(tb testing.TB, secret string) []byte {
	tb.Helper()
	s := strings.TrimPrefix(secret, "whsec_")
	k, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		k, err = base64.RawStdEncoding.DecodeString(s)
	}
	if err != nil {
		tb.Fatalf("bad test secret: %v", err)
	}
	return k
}

// fixture is one scheme with an independent signer, used by the
// scheme-agnostic tests and the benchmarks.
type fixture struct {
	name    string
	opts    provider.Options // Secrets is filled in by the test
	secrets [3]string        // old, new, never configured
	// sign returns the headers a sender holding secret would send, and the
	// signature value in them (for leak checks).
	sign       func(tb testing.TB, secret string, body []byte, now time.Time) (http.Header, string)
	signsBody  bool
	timestamps bool
}

func ts(now time.Time) string { return strconv.FormatInt(now.Unix(), 10) }

var stdSecrets = [3]string{
	"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	"whsec_" + base64.StdEncoding.EncodeToString([]byte("second secret, rotated in")),
	"whsec_" + base64.StdEncoding.EncodeToString([]byte("a third, never configured")),
}

func fixtures() []fixture {
	plain := [3]string{"old-secret-1234", "new-secret-5678", "other-secret-9999"}
	return []fixture{
		{
			name: "stripe", opts: provider.Options{Scheme: "stripe"}, signsBody: true, timestamps: true,
			secrets: [3]string{"whsec_old_secret", "whsec_new_secret", "whsec_other_secret"},
			sign: func(_ testing.TB, secret string, body []byte, now time.Time) (http.Header, string) {
				sig := hex.EncodeToString(mac(sha256.New, []byte(secret), ts(now), ".", string(body)))
				h := http.Header{}
				h.Set("Stripe-Signature", "t="+ts(now)+",v1="+sig)
				return h, sig
			},
		},
		{
			name: "github", opts: provider.Options{Scheme: "github"}, signsBody: true, secrets: plain,
			sign: func(_ testing.TB, secret string, body []byte, _ time.Time) (http.Header, string) {
				sig := hex.EncodeToString(mac(sha256.New, []byte(secret), string(body)))
				h := http.Header{}
				h.Set("X-Hub-Signature-256", "sha256="+sig)
				return h, sig
			},
		},
		{
			name: "shopify", opts: provider.Options{Scheme: "shopify"}, signsBody: true, secrets: plain,
			sign: func(_ testing.TB, secret string, body []byte, _ time.Time) (http.Header, string) {
				sig := base64.StdEncoding.EncodeToString(mac(sha256.New, []byte(secret), string(body)))
				h := http.Header{}
				h.Set("X-Shopify-Hmac-Sha256", sig)
				return h, sig
			},
		},
		{
			name: "slack", opts: provider.Options{Scheme: "slack"}, signsBody: true, timestamps: true, secrets: plain,
			sign: func(_ testing.TB, secret string, body []byte, now time.Time) (http.Header, string) {
				sig := hex.EncodeToString(mac(sha256.New, []byte(secret), "v0:", ts(now), ":", string(body)))
				h := http.Header{}
				h.Set("X-Slack-Signature", "v0="+sig)
				h.Set("X-Slack-Request-Timestamp", ts(now))
				return h, sig
			},
		},
		{
			name: "standard", opts: provider.Options{Scheme: "standard"}, signsBody: true, timestamps: true, secrets: stdSecrets,
			sign: func(tb testing.TB, secret string, body []byte, now time.Time) (http.Header, string) {
				sig := base64.StdEncoding.EncodeToString(mac(sha256.New, whsecKey(tb, secret), "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", ".", ts(now), ".", string(body)))
				h := http.Header{}
				h.Set("webhook-id", "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W")
				h.Set("webhook-timestamp", ts(now))
				h.Set("webhook-signature", "v1,"+sig)
				return h, sig
			},
		},
		{
			name: "gitlab", opts: provider.Options{Scheme: "gitlab"}, secrets: plain,
			sign: func(_ testing.TB, secret string, _ []byte, _ time.Time) (http.Header, string) {
				h := http.Header{}
				h.Set("X-Gitlab-Token", secret)
				return h, secret
			},
		},
		{
			name: "hmac", signsBody: true, secrets: plain,
			opts: provider.Options{Scheme: "hmac", Header: "X-Signature", Prefix: "sha256=", Algorithm: "sha256", Encoding: "hex"},
			sign: func(_ testing.TB, secret string, body []byte, _ time.Time) (http.Header, string) {
				sig := hex.EncodeToString(mac(sha256.New, []byte(secret), string(body)))
				h := http.Header{}
				h.Set("X-Signature", "sha256="+sig)
				return h, sig
			},
		},
		{
			name: "hmac-sha512-base64", signsBody: true, secrets: plain,
			opts: provider.Options{Scheme: "hmac", Header: "X-Sig", Algorithm: "sha512", Encoding: "base64"},
			sign: func(_ testing.TB, secret string, body []byte, _ time.Time) (http.Header, string) {
				sig := base64.StdEncoding.EncodeToString(mac(sha512.New, []byte(secret), string(body)))
				h := http.Header{}
				h.Set("X-Sig", sig)
				return h, sig
			},
		},
		{
			name: "hmac-sha1-hex", signsBody: true, secrets: plain,
			opts: provider.Options{Scheme: "hmac", Header: "X-Hook-Sig", Algorithm: "sha1", Prefix: "sha1="},
			sign: func(_ testing.TB, secret string, body []byte, _ time.Time) (http.Header, string) {
				sig := hex.EncodeToString(mac(sha1.New, []byte(secret), string(body)))
				h := http.Header{}
				h.Set("X-Hook-Sig", "sha1="+sig)
				return h, sig
			},
		},
		{
			name: "zoom", opts: provider.Options{Scheme: "zoom"}, signsBody: true, timestamps: true, secrets: plain,
			sign: func(_ testing.TB, secret string, body []byte, now time.Time) (http.Header, string) {
				sig := hex.EncodeToString(mac(sha256.New, []byte(secret), "v0:", ts(now), ":", string(body)))
				h := http.Header{}
				h.Set("x-zm-signature", "v0="+sig)
				h.Set("x-zm-request-timestamp", ts(now))
				return h, sig
			},
		},
		{
			name: "twitch", opts: provider.Options{Scheme: "twitch"}, signsBody: true, timestamps: true, secrets: plain,
			sign: func(_ testing.TB, secret string, body []byte, now time.Time) (http.Header, string) {
				const id = "e76c6bd4-55c9-4987-8304-da1588d8988b"
				at := now.UTC().Format(time.RFC3339Nano)
				sig := hex.EncodeToString(mac(sha256.New, []byte(secret), id, at, string(body)))
				h := http.Header{}
				h.Set("Twitch-Eventsub-Message-Id", id)
				h.Set("Twitch-Eventsub-Message-Timestamp", at)
				h.Set("Twitch-Eventsub-Message-Signature", "sha256="+sig)
				return h, sig
			},
		},
		{
			name: "discord", opts: provider.Options{Scheme: "discord"}, signsBody: true, timestamps: true, secrets: discordPublic,
			sign: func(tb testing.TB, secret string, body []byte, now time.Time) (http.Header, string) {
				sig := hex.EncodeToString(ed25519.Sign(discordPrivate(tb, secret), append([]byte(ts(now)), body...)))
				h := http.Header{}
				h.Set("X-Signature-Ed25519", sig)
				h.Set("X-Signature-Timestamp", ts(now))
				return h, sig
			},
		},
		{
			name: "token", opts: provider.Options{Scheme: "token", Header: "X-Webhook-Token"}, secrets: plain,
			sign: func(_ testing.TB, secret string, _ []byte, _ time.Time) (http.Header, string) {
				h := http.Header{}
				h.Set("X-Webhook-Token", secret)
				return h, secret
			},
		},
	}
}

func withSecrets(o provider.Options, secrets ...string) provider.Options {
	o.Secrets = secrets
	return o
}

// discordKeys are Ed25519 keys made from fixed seeds: a discord source's
// secrets are their public keys, and its sender signs with the private
// ones.
var discordKeys = func() []ed25519.PrivateKey {
	var keys []ed25519.PrivateKey
	for _, seed := range []string{"discord key one", "discord key two", "discord key three"} {
		sum := sha256.Sum256([]byte(seed))
		keys = append(keys, ed25519.NewKeyFromSeed(sum[:]))
	}
	return keys
}()

var discordPublic = [3]string{
	hex.EncodeToString(discordKeys[0].Public().(ed25519.PublicKey)),
	hex.EncodeToString(discordKeys[1].Public().(ed25519.PublicKey)),
	hex.EncodeToString(discordKeys[2].Public().(ed25519.PublicKey)),
}

func discordPrivate(tb testing.TB, public string) ed25519.PrivateKey {
	tb.Helper()
	for i, p := range discordPublic {
		if p == public {
			return discordKeys[i]
		}
	}
	tb.Fatalf("no private key for %s", public)
	return nil
}
