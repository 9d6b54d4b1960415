package receiver_test

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/location"
	"hookbox/provider"
	"hookbox/receiver"
)

func TestNewSource(t *testing.T) {
	for _, p := range provider.All() {
		t.Run(p.Name, func(t *testing.T) {
			o := provider.Options{Scheme: p.Name, EventID: "json:id"}
			if !p.Unsigned {
				o.Secrets = []string{cmp.Or(p.SecretExample, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")}
			}
			if p.SignsURL {
				o.PublicURL = "https://hooks.example.com/hooks/s"
			}
			if p.Header != "" {
				o.Header = "X-Custom-Sig"
			}
			src, err := receiver.NewSource("s", 0, o)
			if err != nil {
				t.Fatalf("NewSource: %v", err)
			}
			if src.Verifier == nil || src.Name != "s" || len(src.EventID) == 0 {
				t.Fatalf("source %+v, want a verifier, the name and an id location", src)
			}
			if (src.Handshake != nil) != (p.Handshake != nil) {
				t.Errorf("handshake set %t, want the provider's (%t)", src.Handshake != nil, p.Handshake != nil)
			}
			if (len(src.EventType) > 0) != (p.EventType != "") {
				t.Errorf("event type location %v, want the provider's %q", src.EventType, p.EventType)
			}
			if p.Header != "" && !strings.Contains(strings.Join(src.Redact, ","), "X-Custom-Sig") {
				t.Errorf("redacts %v, want the configured header among them", src.Redact)
			}
			if src.PublicURL != o.PublicURL {
				t.Errorf("public URL %q, want %q", src.PublicURL, o.PublicURL)
			}
		})
	}

	for _, tt := range []struct {
		name string
		o    provider.Options
		want string
	}{
		{"Unknown scheme", provider.Options{Scheme: "paddle-classic", Secrets: []string{"k"}}, `unknown scheme "paddle-classic"`},
		{"No default id", provider.Options{Scheme: "token", Header: "X-T", Secrets: []string{"k"}}, "event_id: required"},
		{"Bad id", provider.Options{Scheme: "github", Secrets: []string{"k"}, EventID: "xml:id"}, `event_id: "xml:id"`},
		{"Bad type", provider.Options{Scheme: "github", Secrets: []string{"k"}, EventType: "body-sha256"}, "event_type: "},
		{"No secret", provider.Options{Scheme: "github"}, "no secrets"},
		{"Public URL of a scheme signing none", provider.Options{Scheme: "github", Secrets: []string{"k"}, PublicURL: "https://x/hooks/s"}, "public_url"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := receiver.NewSource("s", 0, tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewSource: err=%v, want one containing %q", err, tt.want)
			}
		})
	}
}

// A slack source built from its provider answers a signed url_verification
// with its challenge and stores nothing; an unsigned one is refused.
func TestServer_ProviderHandshake(t *testing.T) {
	const secret = "slack-signing-secret"
	src, err := receiver.NewSource("slack", 0, provider.Options{Scheme: "slack", Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1700000000, 0)
	st := &recorder{}
	srv := receiver.New(receiver.Config{Sources: []receiver.Source{src}, Now: func() time.Time { return now }, Logger: zerolog.Nop()}, st)
	body := `{"token":"t","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`
	post := func(sign bool) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/hooks/slack", strings.NewReader(body))
		ts := strconv.FormatInt(now.Unix(), 10)
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte("v0:" + ts + ":" + body))
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		if sign {
			req.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(m.Sum(nil)))
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		return w
	}
	w := post(true)
	if w.Code != http.StatusOK || w.Body.String() != `{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}`+"\n" {
		t.Fatalf("answer %d %q, want 200 with the challenge", w.Code, w.Body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if w := post(false); w.Code != http.StatusUnauthorized {
		t.Fatalf("unsigned url_verification answered %d, want 401", w.Code)
	}
	if len(st.got) != 0 {
		t.Fatalf("stored %d events, want none", len(st.got))
	}
}

// Any source's handshake is asked about each verified request, and its
// reply is sent as it is, with its content type: a future provider's
// challenge is one more Handshaker.
func TestServer_Handshake(t *testing.T) {
	var asked []string
	src := receiver.Source{
		Name:    "src",
		EventID: mustLocation(t, "json:id", location.ID),
		Handshake: func(r *location.Request) (provider.Reply, bool) {
			asked = append(asked, r.Header.Get("X-Kind"))
			if r.Header.Get("X-Kind") == "raw" {
				return provider.Reply{ContentType: "text/plain; charset=utf-8", Body: []byte("challenge-1")}, true
			}
			doc, _ := r.JSON()
			if m, _ := doc.(map[string]any); m["op"] != "ping" {
				return provider.Reply{}, false
			}
			return provider.JSONReply(map[string]int{"type": 1}), true
		},
	}
	st := &recorder{}
	srv := receiver.New(receiver.Config{Sources: []receiver.Source{src}, Logger: zerolog.Nop()}, st)
	for _, tt := range []struct {
		kind, body string
		want, ct   string
		stored     int
	}{
		{"ping", `{"op":"ping"}`, `{"type":1}`, "application/json", 0},
		{"raw", `op=challenge`, `challenge-1`, "text/plain; charset=utf-8", 0},
		{"event", `{"op":"event","id":"e1"}`, `{"status":"accepted","event_id":"e1"}`, "application/json", 1},
		{"form", `op=ping&id=e2`, `{"error":"no event id: looked in JSON field id: body is not valid JSON: invalid character 'o' looking for beginning of value"}`, "application/json", 1},
	} {
		req := httptest.NewRequest(http.MethodPost, "/hooks/src", strings.NewReader(tt.body))
		req.Header.Set("X-Kind", tt.kind)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if got := strings.TrimSpace(w.Body.String()); got != tt.want || len(st.got) != tt.stored {
			t.Fatalf("%s: answer %s, stored %d; want %s, %d", tt.kind, got, len(st.got), tt.want, tt.stored)
		}
		if got := w.Header().Get("Content-Type"); got != tt.ct {
			t.Fatalf("%s: Content-Type %q, want %q", tt.kind, got, tt.ct)
		}
	}
	if strings.Join(asked, ",") != "ping,raw,event,form" {
		t.Fatalf("handshake asked about %v, want every verified request", asked)
	}
}

// urlVerifier records the request a RequestVerifier is given.
type urlVerifier struct{ got *provider.Request }

func (v *urlVerifier) Verify(http.Header, []byte, time.Time) error {
	return errors.New("Verify called: the receiver must prefer VerifyRequest")
}

func (v *urlVerifier) VerifyRequest(r *provider.Request, _ time.Time) error {
	v.got = r
	return nil
}

// A verifier that signs the URL is given the one the provider called: the
// source's public URL and the query as received, else the Host header and
// the request URI as received.
func TestServer_RequestVerifier(t *testing.T) {
	for _, tt := range []struct {
		name, public, target, host, want string
	}{
		{"As received", "", "/hooks/src?b=2&a=%3A1", "hooks.example.com:8080", "http://hooks.example.com:8080/hooks/src?b=2&a=%3A1"},
		{"As received, no query", "", "/hooks/src", "127.0.0.1:9", "http://127.0.0.1:9/hooks/src"},
		{"Public URL", "https://example.com/twilio", "/hooks/src?b=2&a=%3A1", "127.0.0.1:9", "https://example.com/twilio?b=2&a=%3A1"},
		{"Public URL, no query", "https://example.com/twilio", "/hooks/src", "127.0.0.1:9", "https://example.com/twilio"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := &urlVerifier{}
			src := receiver.Source{Name: "src", Verifier: v, PublicURL: tt.public, EventID: mustLocation(t, "json:id", location.ID)}
			srv := receiver.New(receiver.Config{Sources: []receiver.Source{src}, Logger: zerolog.Nop()}, &recorder{})
			req := httptest.NewRequest(http.MethodPost, tt.target, strings.NewReader(`{"id":"e1"}`))
			req.Host = tt.host
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				t.Fatalf("status=%d %s, want 200", w.Code, w.Body)
			}
			if v.got == nil || v.got.URL != tt.want || v.got.Method != http.MethodPost || string(v.got.Body) != `{"id":"e1"}` {
				t.Fatalf("VerifyRequest got %+v, want URL %q", v.got, tt.want)
			}
		})
	}
}
