package receiver_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/location"
	"hookbox/provider"
	"hookbox/receiver"
)

// recorder is a Store that keeps what it was given.
type recorder struct {
	IngestFn func(ctx context.Context, e *receiver.Event) (receiver.Result, error)
	got      []*receiver.Event
}

func (r *recorder) Ingest(ctx context.Context, e *receiver.Event) (receiver.Result, error) {
	r.got = append(r.got, e)
	if r.IngestFn != nil {
		return r.IngestFn(ctx, e)
	}
	return receiver.Result{}, nil
}

func mustLocation(tb testing.TB, s string, f location.Field) location.Location {
	tb.Helper()
	if s == "" {
		return nil
	}
	loc, err := location.Parse(s, f)
	if err != nil {
		tb.Fatal(err)
	}
	return loc
}

func TestExtract(t *testing.T) {
	sum := sha256.Sum256([]byte(`not json`))
	long := strings.Repeat("a", receiver.MaxEventIDLen)
	for _, c := range []struct {
		name     string
		id, typ  string
		headers  map[string]string
		body     string
		wantCode int
		wantID   string
		wantType string
		wantErr  string // in the 400 answer
	}{
		{name: "Header", id: "header:X-Event-Id", headers: map[string]string{"x-event-id": "h1"}, body: `{}`, wantCode: 200, wantID: "h1"},
		{name: "JSON nested", id: "json:data.object.id", typ: "json:type", body: `{"type":"a.b","data":{"object":{"id":"obj_1"}}}`, wantCode: 200, wantID: "obj_1", wantType: "a.b"},
		{name: "JSON number kept as written", id: "json:id", body: `{"id":820982911946154508}`, wantCode: 200, wantID: "820982911946154508"},
		{name: "JSON float kept as written", id: "json:id", body: `{"id":1.50}`, wantCode: 200, wantID: "1.50"},
		{name: "First alternative", id: "header:A,header:B", headers: map[string]string{"A": "a1", "B": "b1"}, body: ``, wantCode: 200, wantID: "a1"},
		{name: "Second alternative", id: "header:A,header:B", headers: map[string]string{"B": "b1"}, body: ``, wantCode: 200, wantID: "b1"},
		{name: "JSON then header", id: "json:id,header:X-Id", headers: map[string]string{"X-Id": "x1"}, body: `not json`, wantCode: 200, wantID: "x1"},
		{name: "Body hash", id: "body-sha256", body: `not json`, wantCode: 200, wantID: hex.EncodeToString(sum[:])},
		{name: "Type from header", id: "json:id", typ: "header:X-Type", headers: map[string]string{"X-Type": "t1"}, body: `{"id":"e"}`, wantCode: 200, wantID: "e", wantType: "t1"},
		{name: "Type missing is empty", id: "json:id", typ: "json:type", body: `{"id":"e"}`, wantCode: 200, wantID: "e"},
		{name: "Type unreadable is empty", id: "header:X-Id", typ: "json:type", headers: map[string]string{"X-Id": "x1"}, body: `a=b&c=d`, wantCode: 200, wantID: "x1"},
		{name: "Slack challenge on another source is an event", id: "json:id", body: `{"type":"url_verification","challenge":"c1","id":"v1"}`, wantCode: 200, wantID: "v1"},
		{name: "Auto from a header", id: "auto", headers: map[string]string{"X-GitHub-Delivery": "g1"}, body: `{"id":"j1"}`, wantCode: 200, wantID: "g1"},
		{name: "Auto from JSON", id: "auto", body: `{"id":"j1"}`, wantCode: 200, wantID: "j1"},
		{name: "Auto skips a proxy's request id", id: "auto", headers: map[string]string{"X-Request-Id": "r1"}, body: `{"id":"j1"}`, wantCode: 200, wantID: "j1"},
		{name: "Auto then body hash", id: "auto,body-sha256", body: `not json`, wantCode: 200, wantID: hex.EncodeToString(sum[:])},
		{name: "Longest id", id: "header:X-Id", headers: map[string]string{"X-Id": long}, wantCode: 200, wantID: long},

		{name: "Header missing", id: "header:X-Event-Id", body: `{}`, wantCode: 400, wantErr: "header X-Event-Id"},
		{name: "JSON field missing", id: "json:id", body: `{"type":"x"}`, wantCode: 400, wantErr: "JSON field id"},
		{name: "JSON not JSON", id: "json:id", body: `id=1`, wantCode: 400, wantErr: "JSON field id"},
		{name: "JSON object is no id", id: "json:data", body: `{"data":{"id":"x"}}`, wantCode: 400, wantErr: "JSON field data"},
		{name: "JSON empty string is no id", id: "json:id", body: `{"id":""}`, wantCode: 400, wantErr: "JSON field id"},
		{name: "Auto finds nothing", id: "auto", body: `{"type":"x"}`, wantCode: 400, wantErr: "auto (the usual headers"},
		{name: "Alternatives named", id: "header:A,json:id", body: `{}`, wantCode: 400, wantErr: "header A or JSON field id"},
		{name: "Id over 256 bytes", id: "header:X-Id", headers: map[string]string{"X-Id": long + "a"}, wantCode: 400, wantErr: "256"},
		{name: "Id with LF", id: "json:id", body: `{"id":"a\nb"}`, wantCode: 400, wantErr: "control"},
		{name: "Id with CR", id: "json:id", body: `{"id":"a\rb"}`, wantCode: 400, wantErr: "control"},
		{name: "Id with a C1 control", id: "header:X-Id", headers: map[string]string{"X-Id": "a\u009b31mb"}, wantCode: 400, wantErr: "control"},
		{name: "Id with a bidi override", id: "json:id", body: `{"id":"evt\u202e1"}`, wantCode: 400, wantErr: "control"},
		{name: "Id not UTF-8", id: "header:X-Id", headers: map[string]string{"X-Id": "a\xffb"}, wantCode: 400, wantErr: "UTF-8"},
		{name: "Id in another script", id: "json:id", body: `{"id":"événement-1"}`, wantCode: 200, wantID: "événement-1"},
		{name: "Type with LF is stored untyped", id: "json:id", typ: "json:type", body: `{"id":"a","type":"x\ny"}`, wantCode: 200, wantID: "a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := &recorder{}
			srv := receiver.New(receiver.Config{
				Sources: []receiver.Source{{Name: "src", EventID: mustLocation(t, c.id, location.ID), EventType: mustLocation(t, c.typ, location.Type)}},
				Logger:  zerolog.Nop(),
			}, st)
			req := httptest.NewRequest(http.MethodPost, "/hooks/src", strings.NewReader(c.body))
			for k, v := range c.headers {
				req.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, req)
			if w.Code != c.wantCode {
				t.Fatalf("status=%d body=%s, want %d", w.Code, w.Body, c.wantCode)
			}
			var a struct {
				Status  string `json:"status"`
				EventID string `json:"event_id"`
				Error   string `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
				t.Fatalf("answer %q: %v", w.Body, err)
			}
			if c.wantCode != 200 {
				if len(st.got) != 0 {
					t.Fatalf("stored %d events after %d, want none", len(st.got), w.Code)
				}
				if !strings.Contains(a.Error, c.wantErr) {
					t.Fatalf("error %q, want it to contain %q", a.Error, c.wantErr)
				}
				return
			}
			if len(st.got) != 1 {
				t.Fatalf("stored %d events, want 1", len(st.got))
			}
			e := st.got[0]
			if e.EventID != c.wantID || e.Type != c.wantType || a.EventID != c.wantID || string(e.Body) != c.body {
				t.Fatalf("event id=%q type=%q body=%q (answer %q), want id %q type %q body %q", e.EventID, e.Type, e.Body, a.EventID, c.wantID, c.wantType, c.body)
			}
		})
	}
}

func TestServer_StoreFailure(t *testing.T) {
	st := &recorder{IngestFn: func(context.Context, *receiver.Event) (receiver.Result, error) {
		return receiver.Result{}, errors.New("disk I/O error at /secret/path")
	}}
	srv := receiver.New(receiver.Config{
		Sources: []receiver.Source{{Name: "src", EventID: mustLocation(t, "json:id", location.ID)}},
		Logger:  zerolog.Nop(),
	}, st)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/hooks/src", strings.NewReader(`{"id":"e1"}`)))
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("status=%d Retry-After=%q, want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	if strings.Contains(w.Body.String(), "/secret/path") {
		t.Fatalf("503 body %s carries the internal error", w.Body)
	}
}

func TestServer_Redact(t *testing.T) {
	st := &recorder{}
	srv := receiver.New(receiver.Config{
		Sources: []receiver.Source{{Name: "src", EventID: mustLocation(t, "json:id", location.ID), Redact: []string{"X-Gitlab-Token"}}},
		Now:     func() time.Time { return time.Unix(1700000000, 0) },
		Logger:  zerolog.Nop(),
	}, st)
	req := httptest.NewRequest(http.MethodPost, "/hooks/src", strings.NewReader(`{"id":"e1"}`))
	req.Header.Set("X-Gitlab-Token", "tok-secret")
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	if w.Code != http.StatusOK || len(st.got) != 1 {
		t.Fatalf("status=%d stored=%d, want 200 and one event", w.Code, len(st.got))
	}
	e := st.got[0]
	if v := e.Headers.Get("X-Gitlab-Token"); v == "tok-secret" || v == "" {
		t.Fatalf("stored token header %q, want it redacted", v)
	}
	if !e.ReceivedAt.Equal(time.Unix(1700000000, 0)) {
		t.Fatalf("received_at=%s, want the injected clock", e.ReceivedAt)
	}
}

// Credentials and signatures in any request header are stored redacted:
// the store, `hookbox event` and its --json never show them. Other headers
// are kept as sent.
func TestServer_RedactsCredentialHeaders(t *testing.T) {
	st := &recorder{}
	srv := receiver.New(receiver.Config{
		Sources: []receiver.Source{{Name: "src", EventID: mustLocation(t, "json:id", location.ID), Redact: []string{"x-my-sig"}}},
		Logger:  zerolog.Nop(),
	}, st)
	req := httptest.NewRequest(http.MethodPost, "/hooks/src", strings.NewReader(`{"id":"e1"}`))
	secret := map[string]string{
		"Authorization": "Basic dXNlcjpodW50ZXIy", "Proxy-Authorization": "Bearer p", "Cookie": "session=s",
		"X-Api-Key": "k1", "X-Auth-Token": "t1", "X-Hub-Signature-256": "sha256=ab", "Stripe-Signature": "t=1,v1=ab",
		"X-Shopify-Hmac-Sha256": "aGk=", "Webhook-Signature": "v1,aGk=", "X-Client-Secret": "c", "X-My-Sig": "custom",
	}
	for k, v := range secret {
		req.Header.Set(k, v)
	}
	req.Header.Set("X-GitHub-Delivery", "d-1")
	req.Header.Set("User-Agent", "GitHub-Hookshot/abc")
	srv.ServeHTTP(httptest.NewRecorder(), req)
	if len(st.got) != 1 {
		t.Fatalf("stored %d events, want 1", len(st.got))
	}
	h := st.got[0].Headers
	for k := range secret {
		if v := h.Get(k); v != "[redacted]" {
			t.Errorf("stored %s = %q, want [redacted]", k, v)
		}
	}
	if h.Get("X-GitHub-Delivery") != "d-1" || h.Get("User-Agent") != "GitHub-Hookshot/abc" {
		t.Errorf("stored headers %v, want the other headers as sent", h)
	}
}

// A failed signature check tells the sender what failed and the operator's
// log what to check; the answer never names the configuration.
func TestServer_SignatureFailureHints(t *testing.T) {
	v, err := provider.New(provider.Options{Scheme: "github", Secrets: []string{"s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	srv := receiver.New(receiver.Config{
		Sources: []receiver.Source{{Name: "gh", Verifier: v, EventID: mustLocation(t, "header:X-GitHub-Delivery", location.ID)}},
		Logger:  zerolog.New(&log),
	}, &recorder{})
	req := httptest.NewRequest(http.MethodPost, "/hooks/gh", strings.NewReader(`{}`))
	req.Header.Set("X-GitHub-Delivery", "d1")
	req.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("0", 64))
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "signature mismatch") {
		t.Fatalf("answer %d %s, want 401 saying signature mismatch", w.Code, w.Body)
	}
	if strings.Contains(w.Body.String(), "secret") {
		t.Errorf("the sender's answer names the configuration: %s", w.Body)
	}
	if !strings.Contains(log.String(), "secret_env") || !strings.Contains(log.String(), "signing secret") {
		t.Errorf("log %q does not say what to check", log.String())
	}
}

// net/http's own complaints reach the configured logger (as warnings), not
// stderr: a panic below the handler is one it recovers and logs.
func TestServer_HTTPErrorsGoToTheLogger(t *testing.T) {
	var logs safeBuffer
	srv := receiver.New(receiver.Config{
		Sources: []receiver.Source{{Name: "src", EventID: mustLocation(t, "json:id", location.ID)}},
		Logger:  zerolog.New(&logs),
	}, &recorder{IngestFn: func(context.Context, *receiver.Event) (receiver.Result, error) {
		panic("a bug in the store")
	}})
	if err := srv.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer srv.Shutdown(context.Background())
	if resp, err := http.Post("http://"+srv.Addr().String()+"/hooks/src", "application/json", strings.NewReader(`{"id":"e1"}`)); err == nil {
		resp.Body.Close() // the connection is dropped: no answer expected
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "a bug in the store"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("net/http's panic line did not reach the logger: %q", logs.String())
		}
	}
	if !strings.Contains(logs.String(), `"level":"warn"`) {
		t.Errorf("net/http's line %q, want a warning", logs.String())
	}
}

type safeBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A server whose start failed after Listen gives its address back.
func TestServer_UnbindFreesTheAddress(t *testing.T) {
	srv := receiver.New(receiver.Config{Logger: zerolog.Nop()}, &recorder{})
	if err := srv.Unbind(); err != nil {
		t.Fatalf("unbind before listen: %v", err)
	}
	if err := srv.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr().String()
	if err := srv.Unbind(); err != nil {
		t.Fatalf("unbind: %v", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s after unbind: %v", addr, err)
	}
	ln.Close()
}

// A sender that hangs up while its event waits for the store is not a store
// failure: hookbox_unavailable_total counts 503s the store caused, and the
// log says what happened instead of "could not store the event".
func TestServer_SenderGoneWhileStoring(t *testing.T) {
	var logs bytes.Buffer
	entered := make(chan struct{})
	st := &recorder{IngestFn: func(ctx context.Context, e *receiver.Event) (receiver.Result, error) {
		close(entered)
		<-ctx.Done() // the store skips a write whose request is gone
		return receiver.Result{}, ctx.Err()
	}}
	srv := receiver.New(receiver.Config{
		Sources: []receiver.Source{{Name: "src", EventID: mustLocation(t, "json:id", location.ID)}},
		Logger:  zerolog.New(&logs),
	}, st)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-entered
		cancel()
	}()
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/hooks/src", strings.NewReader(`{"id":"e1"}`)).WithContext(ctx))
	if n := srv.Counters.Failed.Load(); n != 0 {
		t.Errorf("unavailable counter = %d after a sender hung up, want 0", n)
	}
	// A sender that only half-closed still reads the answer: never a 200
	// for an event that was not kept.
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("answer %d to a sender whose event was not kept, want 503", w.Code)
	}
	if !strings.Contains(logs.String(), "closed the connection before its event was stored") || strings.Contains(logs.String(), `"level":"error"`) {
		t.Errorf("log %q, want an info line saying the sender went away, no error", logs.String())
	}

	// A store that fails while the sender waits still counts.
	st.IngestFn = func(context.Context, *receiver.Event) (receiver.Result, error) {
		return receiver.Result{}, errors.New("disk I/O error")
	}
	w = httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/hooks/src", strings.NewReader(`{"id":"e2"}`)))
	if w.Code != http.StatusServiceUnavailable || srv.Counters.Failed.Load() != 1 {
		t.Errorf("store failure: status %d, unavailable counter %d; want 503 and 1", w.Code, srv.Counters.Failed.Load())
	}
}

// Over a real connection: a sender that half-closes (shuts down its
// writing side, still reading) while its event waits for the store gets a
// 503, never the empty 200 net/http would send for a handler that wrote
// nothing.
func TestServer_HalfClosedSenderGetsNo200(t *testing.T) {
	st := &recorder{IngestFn: func(ctx context.Context, e *receiver.Event) (receiver.Result, error) {
		select { // as store.Write: a write whose request ended first is skipped
		case <-ctx.Done():
			return receiver.Result{}, ctx.Err()
		case <-time.After(5 * time.Second):
			return receiver.Result{}, nil
		}
	}}
	srv := receiver.New(receiver.Config{
		Sources: []receiver.Source{{Name: "src", EventID: mustLocation(t, "json:id", location.ID)}},
		Logger:  zerolog.Nop(),
	}, st)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	c, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"id":"e1"}`
	fmt.Fprintf(c, "POST /hooks/src HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	c.(*net.TCPConn).CloseWrite()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	if resp.StatusCode == http.StatusOK {
		t.Fatalf("answered 200 for an event the store never kept")
	}
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("answered %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// A flood of forged requests costs a few warning lines a window, not one
// each; the next line let through says how many were not logged, and
// hookbox_rejected_total still counts every one.
func TestServer_RefusedSignatureLogIsLimited(t *testing.T) {
	v, err := provider.New(provider.Options{Scheme: "github", Secrets: []string{"s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	now := time.Unix(1700000000, 0)
	srv := receiver.New(receiver.Config{
		Sources: []receiver.Source{{Name: "gh", Verifier: v, EventID: mustLocation(t, "header:X-GitHub-Delivery", location.ID)}},
		Now:     func() time.Time { return now },
		Logger:  zerolog.New(&logs),
	}, &recorder{})
	forged := func() {
		req := httptest.NewRequest(http.MethodPost, "/hooks/gh", strings.NewReader(`{}`))
		req.Header.Set("X-GitHub-Delivery", "d1")
		req.Header.Set("X-Hub-Signature-256", "sha256="+strings.Repeat("0", 64))
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code != http.StatusUnauthorized {
			t.Fatalf("forged request answered %d, want 401", w.Code)
		}
	}
	for range 100 {
		forged()
	}
	if n := strings.Count(logs.String(), "\n"); n != 10 {
		t.Errorf("100 forged requests in one window logged %d lines, want 10", n)
	}
	now = now.Add(11 * time.Second)
	logs.Reset()
	forged()
	if !strings.Contains(logs.String(), `"not_logged_before":90`) {
		t.Errorf("first line of the next window: %q, want it to count the 90 not logged", logs.String())
	}
	if n := srv.Counters.Rejected.Load(); n != 101 {
		t.Errorf("rejected counter %d, want every one of the 101", n)
	}
}
