package provider_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/location"
	"hookbox/provider"
	"hookbox/receiver"
)

const notionToken = "secret_tMrlL1qK5vuQAh1b6cZGhFChZTSYJlce98V0pYn7yBl"

func notionSign(secret, body string) string {
	return "sha256=" + hex.EncodeToString(mac(sha256.New, []byte(secret), body))
}

// notionHandshakes reports whether the notion provider's handshake answers
// body, decoded as the receiver decodes it.
func notionHandshakes(t testing.TB, body []byte) bool {
	t.Helper()
	p, _ := provider.Lookup("notion")
	_, ok := p.Handshake(provider.Options{Scheme: "notion"})(&location.Request{Header: http.Header{}, Body: body})
	return ok
}

func TestVerify_NotionSigned(t *testing.T) {
	checkBodyHMAC(t, "notion", "X-Notion-Signature", "sha256=", sha256.New)
}

func TestVerify_Notion(t *testing.T) {
	v := mustNew(t, provider.Options{Scheme: "notion", Secrets: []string{"secret_old", notionToken}})
	event := `{"id":"e1","type":"page.created"}`
	signed := func(secret, body string) http.Header {
		h := http.Header{}
		h.Set("X-Notion-Signature", notionSign(secret, body))
		return h
	}
	tests := []struct {
		name      string
		h         http.Header
		body      string
		want      error
		handshake bool // the verified request is answered by the handshake
	}{
		{"Signed event", signed(notionToken, event), event, nil, false},
		{"Signed with the older secret", signed("secret_old", event), event, nil, false},
		{"Signed with another token", signed("secret_other", event), event, provider.ErrMismatch, false},
		{"Upper-case hex", http.Header{"X-Notion-Signature": {strings.ToUpper(notionSign(notionToken, event))}}, event, provider.ErrMalformed, false},
		{"Unsigned event", http.Header{}, event, provider.ErrMissing, false},
		{"Verification request", http.Header{}, `{"verification_token":"` + notionToken + `"}`, nil, true},
		{"Verification request, spaced", http.Header{}, "{ \"verification_token\" : \"" + notionToken + "\" }\n", nil, true},
		{"Verification request, unknown token", http.Header{}, `{"verification_token":"secret_guess"}`, provider.ErrMismatch, false},
		{"Verification request, empty token", http.Header{}, `{"verification_token":""}`, provider.ErrMissing, false},
		{"Verification request, token not a string", http.Header{}, `{"verification_token":12}`, provider.ErrMissing, false},
		{"Verification request, trailing data", http.Header{}, `{"verification_token":"` + notionToken + `"} {}`, provider.ErrMissing, false},
		{"Verification request in an array", http.Header{}, `[{"verification_token":"` + notionToken + `"}]`, provider.ErrMissing, false},
		{"Verification request, key in another case", http.Header{}, `{"Verification_Token":"` + notionToken + `"}`, provider.ErrMissing, false},
		{"Signed verification request", signed(notionToken, `{"verification_token":"x"}`), `{"verification_token":"x"}`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Verify(tt.h, []byte(tt.body), testNow)
			wantErr(t, err, tt.want, notionToken, "secret_old")
			if err == nil {
				if got := notionHandshakes(t, []byte(tt.body)); got != tt.handshake {
					t.Fatalf("handshake answers: %t, want %t", got, tt.handshake)
				}
			}
		})
	}
}

// recordingStore is a receiver.Store that keeps what it is given.
type recordingStore struct{ events []*receiver.Event }

func (s *recordingStore) Ingest(_ context.Context, e *receiver.Event) (receiver.Result, error) {
	s.events = append(s.events, e)
	return receiver.Result{}, nil
}

// Through the receiver, as serve builds the source: Notion's verification
// request with the source's token is answered and nothing is stored; one
// with another token, or an unsigned event, is refused.
func TestReceiver_NotionVerification(t *testing.T) {
	src, err := receiver.NewSource("notion", 0, provider.Options{Scheme: "notion", Secrets: []string{notionToken}})
	if err != nil {
		t.Fatal(err)
	}
	st := &recordingStore{}
	srv := receiver.New(receiver.Config{Sources: []receiver.Source{src}, Logger: zerolog.Nop()}, st)
	post := func(h http.Header, body string) (int, string) {
		req := httptest.NewRequest(http.MethodPost, "/hooks/notion", strings.NewReader(body))
		for k, v := range h {
			req.Header[k] = v
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		return w.Code, strings.TrimSpace(w.Body.String())
	}

	code, answer := post(http.Header{}, `{"verification_token":"`+notionToken+`"}`)
	if code != http.StatusOK || strings.Contains(answer, notionToken) || len(st.events) != 0 {
		t.Fatalf("verification request: %d %s, stored %d; want 200 without the token, nothing stored", code, answer, len(st.events))
	}
	for _, body := range []string{`{"verification_token":"secret_guess"}`, `{"id":"e1","type":"page.created"}`} {
		if code, answer := post(http.Header{}, body); code != http.StatusUnauthorized || len(st.events) != 0 {
			t.Fatalf("unsigned %s: %d %s, stored %d; want 401, nothing stored", body, code, answer, len(st.events))
		}
	}
	event := `{"id":"e1","type":"page.created"}`
	code, answer = post(http.Header{"X-Notion-Signature": {notionSign(notionToken, event)}}, event)
	if code != http.StatusOK || len(st.events) != 1 || st.events[0].EventID != "e1" || st.events[0].Type != "page.created" {
		t.Fatalf("signed event: %d %s, stored %v; want it accepted as e1, page.created", code, answer, st.events)
	}
	if got := st.events[0].Headers.Get("X-Notion-Signature"); got == notionSign(notionToken, event) {
		t.Fatalf("the signature was stored: %q", got)
	}
}

// FuzzNotion: a request is verified only if a seed signed its body, or it
// is a verification request with a configured token, and then the
// handshake answers it, so nothing unsigned is ever stored as an event.
func FuzzNotion(f *testing.F) {
	cases := loadVectorFile(f, "notion.json")
	secrets := []string{}
	var signed [][]byte
	for _, c := range cases {
		if !slices.Contains(secrets, c.Secret) {
			secrets = append(secrets, c.Secret)
		}
		if c.ExpectValid {
			signed = append(signed, []byte(c.Body))
		}
		f.Add(c.Headers["X-Notion-Signature"], []byte(c.Body))
	}
	f.Add("", []byte(`{"verification_token":"`+notionToken+`"}`))
	f.Add("", []byte(`{"verification_token":"`+notionToken+`","verification_token":"x"}`))
	v := mustNew(f, provider.Options{Scheme: "notion", Secrets: secrets})
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		h := http.Header{}
		h.Set("X-Notion-Signature", sig)
		err := v.Verify(h, body, time.Unix(0, 0))
		checkErr(t, err, secrets...)
		if err != nil || slices.ContainsFunc(signed, func(b []byte) bool { return string(b) == string(body) }) {
			return
		}
		if h.Get("X-Notion-Signature") != "" {
			t.Fatalf("signature %q verified body %q, which no seed signed", sig, body)
		}
		if !notionHandshakes(t, body) {
			t.Fatalf("unsigned body %q verified, and the handshake does not answer it", body)
		}
	})
}
