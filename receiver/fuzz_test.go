package receiver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/location"
	"hookbox/provider"
)

// fuzzHeaders turns "Name: value" lines into a header.
func fuzzHeaders(raw string) http.Header {
	h := http.Header{}
	for _, line := range strings.Split(raw, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return h
}

func fuzzHeaderText(h map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(h)) {
		b.WriteString(k + ": " + h[k] + "\n")
	}
	return b.String()
}

func FuzzExtract(f *testing.F) {
	f.Add("json:id", "", []byte(`{"id":"evt_1"}`), true)
	f.Add("json:event.type", "", []byte(`{"event":{"type":"app_mention"}}`), false)
	f.Add("json:data.object.id", "", []byte(`{"data":{"object":{"id":12345678901234567890}}}`), true)
	f.Add("header:X-GitHub-Delivery", "X-GitHub-Delivery: 72d3162e\n", []byte("{}"), true)
	f.Add("header:webhook-id,header:svix-id", "Svix-Id: msg_1\n", []byte(""), true)
	f.Add("json:id,body-sha256", "", []byte("not json"), true)
	f.Add("auto", "X-Request-Id: r\n", []byte(`{"id":"x","type":"y"}`), true)
	f.Add("auto", "", []byte(`[[[[`), false)
	f.Add("json:id", "", []byte(`{"id":"a"} {"id":"b"}`), true)
	f.Add("json:id", "", []byte(strings.Repeat("[", 20000)), true)
	f.Fuzz(func(t *testing.T, where, rawHeaders string, body []byte, isID bool) {
		field := location.Type
		if isID {
			field = location.ID
		}
		loc, err := location.Parse(where, field)
		if err != nil {
			return
		}
		v, err := loc.Find(&location.Request{Header: fuzzHeaders(rawHeaders), Body: body})
		switch {
		case err == nil && isID && v == "":
			t.Fatalf("Find(%q) found an empty id", where)
		case err != nil && !errors.Is(err, location.ErrNotFound) && !strings.HasPrefix(err.Error(), "body is not valid JSON"):
			t.Fatalf("Find(%q): unexpected error %v", where, err)
		case err != nil && v != "":
			t.Fatalf("Find(%q) = %q with error %v", where, v, err)
		}
		if err == nil {
			_ = validValue(v) // must not panic on any value
		}
	})
}

// fuzzStore is a Store made of a function.
type fuzzStore struct {
	ingest func(ctx context.Context, e *Event) (Result, error)
}

func (s fuzzStore) Ingest(ctx context.Context, e *Event) (Result, error) { return s.ingest(ctx, e) }

// fuzzVector is one case of provider/testdata/signatures.json.
type fuzzVector struct {
	Provider    string            `json:"provider"`
	Secret      string            `json:"secret"`
	Body        string            `json:"body"`
	Headers     map[string]string `json:"headers"`
	NowUnix     int64             `json:"now_unix"`
	ExpectValid bool              `json:"expect_valid"`
	Notes       string            `json:"notes"`

	source string // the fuzz source it belongs to
}

// fuzzSource is a source built from the vectors, with what the fuzz
// property needs: the bodies its senders signed, and its secrets.
type fuzzSource struct {
	Source
	signed  [][]byte // nil for token schemes
	secrets []string
	wrong   []string // secrets only invalid vectors are signed with
	token   string   // header compared to the secret, token schemes
	basic   bool     // the token header carries Basic credentials, user:password the secret
}

var fuzzEncoding = regexp.MustCompile(`encoding=(hex|base64)`)

// fuzzSources builds one source per preset the vectors cover, each holding
// every secret its vectors use, and returns the vectors as seeds.
func fuzzSources(f testing.TB) (map[string]*fuzzSource, []fuzzVector) {
	files, err := filepath.Glob("../provider/testdata/*.json")
	if err != nil || len(files) == 0 {
		f.Fatalf("no vector files: %v", err)
	}
	var vs []fuzzVector
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var more []fuzzVector
		if err := json.Unmarshal(b, &more); err != nil {
			f.Fatalf("%s: %v", file, err)
		}
		vs = append(vs, more...)
	}
	// Each source is built from its provider, as serve builds it: the
	// verifier, the default locations, the handshake and the redaction.
	srcs := map[string]*fuzzSource{
		"stripe":   {},
		"github":   {},
		"shopify":  {},
		"slack":    {},
		"standard": {},
		"gitlab":   {token: "X-Gitlab-Token"},
		"zoom":     {},
		"twitch":   {},
		"discord":  {},
		"hmac":     {},
		"hmac64":   {},
		// The later presets whose signatures cover the body, its headers
		// or a credential header, but not the URL.
		"calendly":     {},
		"clerk":        {},
		"intercom":     {},
		"lemonsqueezy": {},
		"linear":       {},
		"mailgun":      {},
		"notion":       {},
		"paddle":       {},
		"pagarme":      {},
		"resend":       {},
		"sendgrid":     {},
		"sentry":       {},
		"typeform":     {},
		"vercel":       {},
		"woocommerce":  {},
		"asaas":        {token: "Asaas-Access-Token"},
		"telegram":     {token: "X-Telegram-Bot-Api-Secret-Token"},
		"postmark":     {token: "Authorization", basic: true},
	}
	// The schemes that sign the URL (twilio, square, hubspot) or read the
	// query (mercadopago) are left out: their vectors were signed for URLs
	// this fuzz's requests do not have. Their own fuzz targets are in
	// package provider.
	name := func(v fuzzVector) string {
		switch v.Provider {
		case "standard-webhooks", "svix":
			return "standard"
		case "generic-hmac-sha256":
			if m := fuzzEncoding.FindStringSubmatch(v.Notes); m != nil && m[1] == "base64" {
				return "hmac64"
			}
			return "hmac"
		}
		return v.Provider
	}
	var seeds []fuzzVector
	for _, v := range vs {
		s := srcs[name(v)]
		if s == nil {
			continue // a provider hookbox has no preset for
		}
		v.source = name(v)
		seeds = append(seeds, v)
		// Only the secrets of valid vectors verify: an invalid one may be
		// signed with a secret of its own (the wrong one), which must
		// stay wrong. Both kinds must never be leaked.
		if !v.ExpectValid && !slices.Contains(s.secrets, v.Secret) && !slices.Contains(s.wrong, v.Secret) {
			s.wrong = append(s.wrong, v.Secret)
		}
		if v.ExpectValid && !slices.Contains(s.secrets, v.Secret) {
			s.secrets = append(s.secrets, v.Secret)
		}
		if v.ExpectValid && s.token == "" {
			s.signed = append(s.signed, []byte(v.Body))
		}
	}
	for n, s := range srcs {
		s.Source = fuzzNewSource(f, n, s.secrets)
	}
	return srcs, seeds
}

// fuzzNewSource is the fuzz's source n holding secrets.
func fuzzNewSource(tb testing.TB, n string, secrets []string) Source {
	o := provider.Options{Scheme: n, Secrets: secrets}
	switch n {
	case "hmac":
		o.Header, o.Prefix, o.Encoding, o.EventID = "X-Signature", "sha256=", "hex", "body-sha256"
	case "hmac64":
		o.Scheme, o.Header, o.Encoding, o.EventID = "hmac", "X-Signature", "base64", "body-sha256"
	}
	src, err := NewSource(n, 0, o)
	if err != nil {
		tb.Fatalf("source %s: %v", n, err)
	}
	return src
}

// FuzzServeHTTP sends arbitrary requests to a Server with every preset.
// Whatever comes in, it never panics, never answers 5xx except 503 when the
// store fails, never leaks a secret in an answer, and never accepts a
// request on a signed source unless the signature is valid: a 200 carries a
// body some sender signed (or, for token schemes, the token).
func FuzzServeHTTP(f *testing.F) {
	srcs, seeds := fuzzSources(f)
	for _, v := range seeds {
		f.Add("POST", "/hooks/"+v.source, fuzzHeaderText(v.Headers), []byte(v.Body), v.NowUnix, false)
		f.Add("POST", "/hooks/"+v.source, fuzzHeaderText(v.Headers), []byte(v.Body), v.NowUnix, true)
	}
	f.Add("GET", "/hooks/stripe", "", []byte(nil), int64(0), false)
	f.Add("POST", "/hooks/../stripe", "", []byte("{}"), int64(0), false)
	f.Add("POST", "/hooks/", "", []byte("{}"), int64(0), false)
	f.Add("GET", "/healthz", "", []byte(nil), int64(0), false)
	f.Add("POST", "/hooks/open", "X-Event-Id: e\n", []byte(`{"id":"a"}`), int64(0), false)

	list := fuzzList(f, srcs)
	var allSecrets []string
	for _, s := range srcs {
		allSecrets = append(allSecrets, s.secrets...)
		allSecrets = append(allSecrets, s.wrong...)
	}

	f.Fuzz(func(t *testing.T, method, path, rawHeaders string, body []byte, now int64, fail bool) {
		var stored *Event
		st := fuzzStore{ingest: func(_ context.Context, e *Event) (Result, error) {
			if fail {
				return Result{}, errors.New("disk I/O error")
			}
			stored = e
			return Result{}, nil
		}}
		s := New(Config{Sources: list, Now: func() time.Time { return time.Unix(now, 0) }, Logger: zerolog.Nop()}, st)
		_, w := fuzzServe(s, method, path, fuzzHeaders(rawHeaders), body)

		code, answer := w.Code, w.Body.String()
		if code >= 500 && !(code == http.StatusServiceUnavailable && fail) {
			t.Fatalf("%s %s: status %d %q", method, path, code, answer)
		}
		for _, sec := range allSecrets {
			if strings.Contains(answer, sec) {
				t.Fatalf("answer %q contains a secret", answer)
			}
		}
		name, isHook := strings.CutPrefix(path, "/hooks/")
		src := srcs[name]
		if code != http.StatusOK || !isHook || src == nil {
			if stored != nil && code != http.StatusOK {
				t.Fatalf("status %d but the store was given an event", code)
			}
			return
		}
		if src.token != "" {
			// As sent: the stored copy of the request's headers has it redacted.
			tok := fuzzHeaders(rawHeaders).Get(src.token)
			if src.basic {
				r := &http.Request{Header: http.Header{"Authorization": {tok}}}
				user, pass, _ := r.BasicAuth()
				tok = user + ":" + pass
			}
			if !slices.Contains(src.secrets, tok) {
				t.Fatalf("source %s accepted token %q, not a secret", name, tok)
			}
		} else if !slices.ContainsFunc(src.signed, func(b []byte) bool { return bytes.Equal(b, body) }) {
			t.Fatalf("source %s accepted body %q, which no sender signed", name, body)
		}
		if stored == nil {
			return // answered by the source itself (Slack url_verification)
		}
		if stored.EventID == "" || validValue(stored.EventID) != nil || validValue(stored.Type) != nil {
			t.Fatalf("stored event id %q type %q", stored.EventID, stored.Type)
		}
		if !bytes.Equal(stored.Body, body) {
			t.Fatalf("stored body %q, want the raw %q", stored.Body, body)
		}
		for _, h := range src.Redact {
			for _, v := range stored.Headers.Values(h) {
				if slices.Contains(src.secrets, v) {
					t.Fatalf("header %s stored with its secret", h)
				}
			}
		}
	})
}

func mustLocation(tb testing.TB, s string) location.Location {
	tb.Helper()
	l, err := location.Parse(s, location.ID)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// fuzzList is every vector source plus an unsigned one.
func fuzzList(tb testing.TB, srcs map[string]*fuzzSource) []Source {
	list := []Source{{Name: "open", EventID: mustLocation(tb, "json:id,header:X-Event-Id")}}
	for _, n := range slices.Sorted(maps.Keys(srcs)) {
		list = append(list, srcs[n].Source)
	}
	return list
}

func fuzzServe(s *Server, method, path string, h http.Header, body []byte) (*http.Request, *httptest.ResponseRecorder) {
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	r.Method, r.URL.Path, r.URL.RawPath = method, path, ""
	r.Header = h
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return r, w
}

// TestFuzzSeeds_Vectors checks that FuzzServeHTTP starts from meaningful
// seeds: each valid vector is accepted (or, lacking an event id, answered
// 400), each invalid one is answered 401, and every source accepts one.
func TestFuzzSeeds_Vectors(t *testing.T) {
	srcs, seeds := fuzzSources(t)
	list := fuzzList(t, srcs)
	accepted := map[string]bool{}
	for _, v := range seeds {
		st := fuzzStore{ingest: func(context.Context, *Event) (Result, error) { return Result{}, nil }}
		list := list
		if !v.ExpectValid {
			// Verified with its own secret alone, as the vectors mean: a
			// case signed with another case's secret is a wrong secret
			// here, where a source holding both (a rotation) would take it.
			one := map[string]*fuzzSource{v.source: {Source: fuzzNewSource(t, v.source, []string{v.Secret})}}
			list = fuzzList(t, one)
		}
		s := New(Config{Sources: list, Now: func() time.Time { return time.Unix(v.NowUnix, 0) }, Logger: zerolog.Nop()}, st)
		h := fuzzHeaders(fuzzHeaderText(v.Headers))
		_, w := fuzzServe(s, http.MethodPost, "/hooks/"+v.source, h, []byte(v.Body))
		switch {
		case v.ExpectValid && w.Code == http.StatusOK:
			accepted[v.source] = true
		case v.ExpectValid && w.Code == http.StatusBadRequest && strings.Contains(w.Body.String(), "no event id"):
		case !v.ExpectValid && w.Code == http.StatusUnauthorized:
		default:
			t.Errorf("%s vector (valid=%t): %d %s", v.source, v.ExpectValid, w.Code, w.Body)
		}
	}
	for n := range srcs {
		if !accepted[n] {
			t.Errorf("source %s accepted no vector", n)
		}
	}
}
