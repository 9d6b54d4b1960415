package main_test

import (
	hookbox "hookbox"

	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/dedupe"
	"hookbox/provider"
)

// listedEvent is one line of `hookbox events --json`, with the keys the
// contract promises.
type listedEvent struct {
	ID           int64  `json:"id"`
	Source       string `json:"source"`
	EventID      string `json:"event_id"`
	Type         string `json:"type"`
	ReceivedAt   string `json:"received_at"`
	Redeliveries int64  `json:"redeliveries"`
	Deliveries   []struct {
		Target    string `json:"target"`
		Status    string `json:"status"`
		Attempts  int    `json:"attempts"`
		LastError string `json:"last_error"`
	} `json:"deliveries"`
}

// listEvents runs `hookbox events --json` on the store in dir.
func listEvents(tb testing.TB, dir string, args ...string) []listedEvent {
	tb.Helper()
	args = append([]string{"events", "--config", storeConfig(tb, dir), "--json"}, args...)
	stdout, stderr, err := runCLI(tb, args...)
	if err != nil {
		tb.Fatalf("events: %v (stderr %q)", err, stderr)
	}
	var out []listedEvent
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var e listedEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			tb.Fatalf("events --json line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// answer is the JSON body of a receiver answer.
type answer struct {
	Status  string `json:"status"`
	EventID string `json:"event_id"`
	Error   string `json:"error"`
}

func decodeAnswer(tb testing.TB, body string) answer {
	tb.Helper()
	var a answer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		tb.Fatalf("answer %q is not JSON: %v", body, err)
	}
	return a
}

// expectAnswer checks a 200 answer's status and event id.
func expectAnswer(tb testing.TB, code int, body, status, eventID string) {
	tb.Helper()
	if code != http.StatusOK {
		tb.Fatalf("status=%d body=%s, want 200 %s", code, body, status)
	}
	a := decodeAnswer(tb, body)
	if a.Status != status || a.EventID != eventID {
		tb.Fatalf("answer=%+v, want status %q event_id %q", a, status, eventID)
	}
}

// post sends a webhook without failing the test, for use in goroutines.
func post(url string, headers map[string]string, body []byte) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

const githubSecret = "gh-secret-0123456789"

func githubConfig(extra string) string {
	return fmt.Sprintf(`
[[source]]
name = "github"
verify = "github"
secret = %q
`, githubSecret) + extra
}

func githubHeaders(delivery string, body []byte) map[string]string {
	return map[string]string{
		"Content-Type":        "application/json",
		"X-GitHub-Event":      "push",
		"X-GitHub-Delivery":   delivery,
		"X-Hub-Signature-256": githubSig(githubSecret, body),
	}
}

func TestIngest_DuplicateInSequence(t *testing.T) {
	tm := MustRunMain(t, githubConfig(""), "")
	body := []byte(`{"ref":"refs/heads/main"}`)
	h := githubHeaders("d-1", body)

	code, resp := tm.Post("/hooks/github", h, body)
	expectAnswer(t, code, resp, "accepted", "d-1")
	code, resp = tm.Post("/hooks/github", h, body)
	expectAnswer(t, code, resp, "duplicate", "d-1")

	list := listEvents(t, tm.Dir)
	if len(list) != 1 {
		t.Fatalf("stored %d events, want 1: %+v", len(list), list)
	}
	e := list[0]
	if e.Source != "github" || e.EventID != "d-1" || e.Type != "push" || e.Redeliveries != 1 {
		t.Fatalf("stored %+v, want github/d-1/push with 1 redelivery", e)
	}
	got, err := tm.DB.GetEvent(context.Background(), e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Body, body) {
		t.Fatalf("stored body %q, want %q", got.Body, body)
	}
}

func TestIngest_ConcurrentDuplicates(t *testing.T) {
	var hits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
	}))
	defer target.Close()
	tm := MustRunMain(t, githubConfig(fmt.Sprintf(`
[[target]]
name = "sink"
source = "github"
url = %q
`, target.URL)), "")

	const n = 25
	body := []byte(`{"action":"opened"}`)
	h := githubHeaders("same-delivery", body)
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[string]int{}
	var errs []string
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			code, resp, err := post(tm.URL+"/hooks/github", h, body)
			mu.Lock()
			defer mu.Unlock()
			if err != nil || code != http.StatusOK {
				errs = append(errs, fmt.Sprintf("status=%d body=%s err=%v", code, resp, err))
				return
			}
			var a answer
			if err := json.Unmarshal([]byte(resp), &a); err != nil || a.EventID != "same-delivery" {
				errs = append(errs, fmt.Sprintf("answer %q", resp))
				return
			}
			statuses[a.Status]++
		}()
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("failed posts: %v", errs)
	}
	if statuses["accepted"] != 1 || statuses["duplicate"] != n-1 {
		t.Fatalf("answers=%v, want 1 accepted and %d duplicate", statuses, n-1)
	}

	var list []listedEvent
	waitFor(t, 10*time.Second, "the delivery to finish", func() bool {
		list = listEvents(t, tm.Dir)
		return len(list) == 1 && len(list[0].Deliveries) == 1 && list[0].Deliveries[0].Status == "done"
	})
	if list[0].Redeliveries != n-1 {
		t.Fatalf("redeliveries=%d, want %d", list[0].Redeliveries, n-1)
	}
	if got := hits.Load(); got != 1 {
		t.Fatalf("target called %d times, want 1 (business work must not re-run)", got)
	}
}

func TestReceiver_ContractAnswers(t *testing.T) {
	const stripeSecret = "whsec_stripe_test_secret"
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tm := MustRunMain(t, githubConfig(fmt.Sprintf(`
[server]
max_body = "1KiB"

[[source]]
name = "stripe"
verify = "stripe"
secret = %q
`, stripeSecret)), "", WithNow(now))

	stored := 0
	expectStored := func(t *testing.T) {
		t.Helper()
		list, err := tm.DB.ListEvents(context.Background(), dedupe.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != stored {
			t.Fatalf("stored %d events, want %d: %+v", len(list), stored, list)
		}
	}
	expectError := func(t *testing.T, code int, body string, want int) answer {
		t.Helper()
		if code != want {
			t.Fatalf("status=%d body=%s, want %d", code, body, want)
		}
		a := decodeAnswer(t, body)
		if a.Error == "" || a.Status != "" {
			t.Fatalf("answer %s, want {\"error\":…}", body)
		}
		expectStored(t)
		return a
	}

	ghBody := []byte(`{"zen":"Keep it logically awesome."}`)
	t.Run("New event, valid signature", func(t *testing.T) {
		code, body := tm.Post("/hooks/github", githubHeaders("gh-1", ghBody), ghBody)
		expectAnswer(t, code, body, "accepted", "gh-1")
		stored++
		expectStored(t)
		list, _ := tm.DB.ListEvents(context.Background(), dedupe.Filter{Source: "github"})
		e, err := tm.DB.GetEvent(context.Background(), list[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(e.Body, ghBody) || e.Headers.Get("X-Github-Event") != "push" || !e.ReceivedAt.Equal(now) {
			t.Fatalf("stored body=%q headers=%v received=%s, want the request's bytes and headers at %s", e.Body, e.Headers, e.ReceivedAt, now)
		}
	})
	t.Run("Duplicate", func(t *testing.T) {
		code, body := tm.Post("/hooks/github", githubHeaders("gh-1", ghBody), ghBody)
		expectAnswer(t, code, body, "duplicate", "gh-1")
		expectStored(t)
	})
	t.Run("Stripe new event", func(t *testing.T) {
		b := []byte(`{"id":"evt_1","type":"invoice.paid"}`)
		code, body := tm.Post("/hooks/stripe", map[string]string{"Stripe-Signature": stripeSig(stripeSecret, now, b)}, b)
		expectAnswer(t, code, body, "accepted", "evt_1")
		stored++
		expectStored(t)
	})
	t.Run("Signature missing", func(t *testing.T) {
		h := githubHeaders("gh-2", ghBody)
		delete(h, "X-Hub-Signature-256")
		code, body := tm.Post("/hooks/github", h, ghBody)
		expectError(t, code, body, http.StatusUnauthorized)
	})
	t.Run("Signature invalid", func(t *testing.T) {
		sent := []byte(`{"zen":"tampered"}`)
		h := githubHeaders("gh-3", ghBody) // signed over another body
		code, body := tm.Post("/hooks/github", h, sent)
		expectError(t, code, body, http.StatusUnauthorized)
		correct := strings.TrimPrefix(githubSig(githubSecret, sent), "sha256=")
		received := strings.TrimPrefix(h["X-Hub-Signature-256"], "sha256=")
		for _, secret := range []string{githubSecret, correct, received} {
			if strings.Contains(body, secret) || strings.Contains(tm.Logs.String(), secret) {
				t.Fatalf("401 body %s or the log reveals %q", body, secret)
			}
		}
	})
	t.Run("Stripe timestamp outside tolerance", func(t *testing.T) {
		b := []byte(`{"id":"evt_old","type":"invoice.paid"}`)
		// Only the past is bounded: Stripe's own libraries accept a
		// timestamp ahead of the receiver's clock.
		for _, ts := range []time.Time{now.Add(-6 * time.Minute), now.Add(-24 * time.Hour)} {
			code, body := tm.Post("/hooks/stripe", map[string]string{"Stripe-Signature": stripeSig(stripeSecret, ts, b)}, b)
			expectError(t, code, body, http.StatusUnauthorized)
			if strings.Contains(body, stripeSecret) || strings.Contains(tm.Logs.String(), stripeSecret) {
				t.Fatalf("the secret leaked into the answer or the log")
			}
		}
	})
	t.Run("Unknown source", func(t *testing.T) {
		code, body := tm.Post("/hooks/nope", githubHeaders("gh-4", ghBody), ghBody)
		expectError(t, code, body, http.StatusNotFound)
	})
	t.Run("Method not allowed", func(t *testing.T) {
		resp, err := http.Get(tm.URL + "/hooks/github")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodPost {
			t.Fatalf("status=%d Allow=%q, want 405 with Allow: POST", resp.StatusCode, resp.Header.Get("Allow"))
		}
		expectStored(t)
	})
	big := bytes.Repeat([]byte("x"), 2048)
	t.Run("Body over the limit, Content-Length", func(t *testing.T) {
		code, body := tm.Post("/hooks/github", githubHeaders("gh-5", big), big)
		expectError(t, code, body, http.StatusRequestEntityTooLarge)
	})
	t.Run("Body over the limit, chunked", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodPost, tm.URL+"/hooks/github", io.MultiReader(bytes.NewReader(big)))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range githubHeaders("gh-6", big) {
			req.Header.Set(k, v)
		}
		req.ContentLength = -1 // unknown length: sent chunked
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		expectError(t, resp.StatusCode, string(b), http.StatusRequestEntityTooLarge)
	})
	t.Run("Event id not found", func(t *testing.T) {
		b := []byte(`{"type":"invoice.paid"}`)
		code, body := tm.Post("/hooks/stripe", map[string]string{"Stripe-Signature": stripeSig(stripeSecret, now, b)}, b)
		a := expectError(t, code, body, http.StatusBadRequest)
		if !strings.Contains(a.Error, "JSON field id") {
			t.Fatalf("error %q does not say where it looked (JSON field id)", a.Error)
		}
	})
	t.Run("Healthz", func(t *testing.T) {
		resp, err := http.Get(tm.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status=%d, want 200", resp.StatusCode)
		}
	})
	t.Run("Store cannot commit", func(t *testing.T) {
		if err := tm.DB.Close(); err != nil {
			t.Fatal(err)
		}
		fresh := []byte(`{"zen":"fresh"}`)
		for _, c := range []struct {
			id   string
			body []byte
		}{{"gh-7", fresh}, {"gh-1", ghBody}} {
			req, _ := http.NewRequest(http.MethodPost, tm.URL+"/hooks/github", bytes.NewReader(c.body))
			for k, v := range githubHeaders(c.id, c.body) {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("%s: status=%d Retry-After=%q body=%s, want 503 with Retry-After", c.id, resp.StatusCode, resp.Header.Get("Retry-After"), b)
			}
			if a := decodeAnswer(t, string(b)); a.Error == "" {
				t.Fatalf("503 body %s, want {\"error\":…}", b)
			}
		}
		list := listEvents(t, tm.Dir)
		if len(list) != stored {
			t.Fatalf("after 503: %d events stored, want %d", len(list), stored)
		}
		for _, e := range list {
			if e.EventID == "gh-1" && e.Redeliveries != 1 {
				t.Fatalf("gh-1 redeliveries=%d after a 503, want 1", e.Redeliveries)
			}
		}
	})
}

func TestServe_RestartKeepsEventsAndDedupe(t *testing.T) {
	cfg := githubConfig("")
	tm := MustRunMain(t, cfg, "")
	body := []byte(`{"n":1}`)
	code, resp := tm.Post("/hooks/github", githubHeaders("r-1", body), body)
	expectAnswer(t, code, resp, "accepted", "r-1")
	if err := tm.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	tm2 := MustRunMain(t, cfg, tm.Dir)
	code, resp = tm2.Post("/hooks/github", githubHeaders("r-1", body), body)
	expectAnswer(t, code, resp, "duplicate", "r-1")
	list := listEvents(t, tm2.Dir)
	if len(list) != 1 || list[0].EventID != "r-1" || list[0].Redeliveries != 1 {
		t.Fatalf("after restart events=%+v, want r-1 with 1 redelivery", list)
	}
}

// rawPost sends a request line exactly as written, so the client cannot
// clean the path.
func rawPost(tb testing.TB, addr, path string) int {
	tb.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", path, addr)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		tb.Fatalf("read response to %s: %v", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestLocalSink(t *testing.T) {
	tm := MustRunMain(t, "", "")
	ids := []struct {
		name    string
		headers map[string]string
		body    string
		want    string
	}{
		{"webhook-id", map[string]string{"webhook-id": "msg_1"}, `{"a":1}`, "msg_1"},
		{"X-GitHub-Delivery", map[string]string{"X-GitHub-Delivery": "gh-del-1"}, `{"a":1}`, "gh-del-1"},
		{"Idempotency-Key", map[string]string{"Idempotency-Key": "idem-1"}, `plain text`, "idem-1"},
		{"JSON id", nil, `{"id":"evt_json","type":"thing.done"}`, "evt_json"},
		{"JSON numeric id", nil, `{"id":820982911946154508}`, "820982911946154508"},
	}
	for _, c := range ids {
		t.Run(c.name, func(t *testing.T) {
			code, resp := tm.Post("/hooks/anything", c.headers, []byte(c.body))
			expectAnswer(t, code, resp, "accepted", c.want)
			code, resp = tm.Post("/hooks/anything", c.headers, []byte(c.body))
			expectAnswer(t, code, resp, "duplicate", c.want)
		})
	}
	t.Run("Generated ids", func(t *testing.T) {
		var got []string
		for range 2 {
			code, resp := tm.Post("/hooks/other.name", nil, []byte("no id here"))
			if code != http.StatusOK {
				t.Fatalf("status=%d body=%s, want 200", code, resp)
			}
			a := decodeAnswer(t, resp)
			if a.Status != "accepted" || a.EventID == "" {
				t.Fatalf("answer %s, want accepted with a generated id", resp)
			}
			got = append(got, a.EventID)
		}
		if got[0] == got[1] {
			t.Fatalf("two posts without an id got the same id %q", got[0])
		}
	})
	list := listEvents(t, tm.Dir)
	if len(list) != len(ids)+2 {
		t.Fatalf("stored %d events, want %d", len(list), len(ids)+2)
	}
	for _, e := range list {
		if e.Source != "anything" && e.Source != "other.name" {
			t.Fatalf("event stored under source %q, want the path's name", e.Source)
		}
	}

	t.Run("Dot paths", func(t *testing.T) {
		for _, p := range []string{"/hooks/../x", "/hooks/%2e%2e", "/hooks/..", "/hooks/.", "/hooks/a/b", "/hooks/"} {
			if code := rawPost(t, tm.Addr(), p); code != http.StatusNotFound {
				t.Fatalf("POST %s: status=%d, want 404", p, code)
			}
		}
		if got := listEvents(t, tm.Dir); len(got) != len(list) {
			t.Fatalf("stored %d events after rejected paths, want %d", len(got), len(list))
		}
	})
}

// vector is one case of provider/testdata/*.json.
type vector struct {
	Provider        string            `json:"provider"`
	Name            string            `json:"name"`
	Secret          string            `json:"secret"`
	Body            string            `json:"body"`
	Headers         map[string]string `json:"headers"`
	NowUnix         int64             `json:"now_unix"`
	ExpectValid     bool              `json:"expect_valid"`
	ExpectedEventID *string           `json:"expected_event_id"`
	Notes           string            `json:"notes"`
	// URL is the URL the provider called, for the schemes that sign it or
	// read its query.
	URL *string `json:"url"`
	// ExpectedReply is a handshake's answer: sent, nothing stored.
	ExpectedReply *struct {
		ContentType string `json:"content_type"`
		Body        string `json:"body"`
	} `json:"expected_reply"`
}

// target is where a case is posted: /hooks/src with the query of the URL
// the provider called, and the public_url that makes the receiver see that
// URL ("" for a case without one).
func (v vector) target(tb testing.TB) (path, publicURL string) {
	tb.Helper()
	if v.URL == nil {
		return "/hooks/src", ""
	}
	base, query, _ := strings.Cut(*v.URL, "?")
	if query != "" {
		return "/hooks/src?" + query, base
	}
	return "/hooks/src", base
}

var (
	notePrefix   = regexp.MustCompile(`prefix='([^']*)'`)
	noteEncoding = regexp.MustCompile(`encoding=(hex|base64)`)
	noteHeader   = regexp.MustCompile(`header=([A-Za-z0-9-]+)`)
)

// vectorSource returns the [[source]] for a case, or "" for providers that
// are not hookbox presets.
func vectorSource(v vector) string {
	src := fmt.Sprintf("[[source]]\nname = \"src\"\nsecret = %q\n", v.Secret)
	switch v.Provider {
	case "standard-webhooks", "svix":
		return src + `verify = "standard"` + "\n"
	case "stripe", "github", "shopify":
		return src + fmt.Sprintf("verify = %q\n", v.Provider)
	case "gitlab":
		// GitLab keeps Idempotency-Key across retries; the preset's
		// X-Gitlab-Event-UUID is the fallback for older instances.
		return src + "verify = \"gitlab\"\nevent_id = \"header:Idempotency-Key,header:X-Gitlab-Event-UUID\"\n"
	case "slack":
		// Slash commands are form-encoded and carry no event_id: the body's
		// hash is their only stable id.
		return src + "verify = \"slack\"\nevent_id = \"json:event_id,body-sha256\"\n"
	case "twilio":
		// The official case's id is the I-Twilio-Idempotency-Token it
		// carries: a source that trusts the token dedupes on it, and on
		// the body's hash (the preset's) when it is absent.
		return src + "verify = \"twilio\"\nevent_id = \"header:I-Twilio-Idempotency-Token,body-sha256\"\n" + publicURL(v)
	case "generic-hmac-sha256":
		header, prefix, encoding := "X-Signature", "", "hex"
		if m := noteHeader.FindStringSubmatch(v.Notes); m != nil {
			header = m[1]
		}
		if m := notePrefix.FindStringSubmatch(v.Notes); m != nil {
			prefix = m[1]
		}
		if m := noteEncoding.FindStringSubmatch(v.Notes); m != nil {
			encoding = m[1]
		}
		// The bodies are plain text with no id header: the body's hash is the id.
		return src + fmt.Sprintf("verify = \"hmac\"\nheader = %q\nprefix = %q\nencoding = %q\nalgorithm = \"sha256\"\nevent_id = \"body-sha256\"\n",
			header, prefix, encoding)
	}
	// A preset added since signatures.json was written, with vectors of
	// its own (provider/testdata/NAME.json).
	if p, ok := provider.Lookup(v.Provider); ok && p.Header == "" && !p.Unsigned {
		src += fmt.Sprintf("verify = %q\n", v.Provider)
		if p.SignsURL {
			src += publicURL(v)
		}
		return src
	}
	return ""
}

// publicURL is the public_url line of a case signed for a URL: the URL
// without its query, which the request carries.
func publicURL(v vector) string {
	if v.URL == nil {
		return ""
	}
	base, _, _ := strings.Cut(*v.URL, "?")
	return fmt.Sprintf("public_url = %q\n", base)
}

func TestReceiver_Vectors(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("provider", "testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no vector files: %v", err)
	}
	var vectors []vector
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var vs []vector
		if err := json.Unmarshal(data, &vs); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		vectors = append(vectors, vs...)
	}
	ran := 0
	for _, v := range vectors {
		t.Run(v.Provider+"/"+v.Name, func(t *testing.T) {
			cfg := vectorSource(v)
			if cfg == "" {
				t.Skipf("%s is not a hookbox preset, and its scheme signs more than the body (URL, manifest or timestamp), so hmac cannot check it", v.Provider)
			}
			ran++
			tm := MustRunMain(t, cfg, "", WithNow(time.Unix(v.NowUnix, 0)))
			path, _ := v.target(t)
			code, body, contentType := postCase(t, tm.URL+path, v)
			list, err := tm.DB.ListEvents(context.Background(), dedupe.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if !v.ExpectValid {
				if code != http.StatusUnauthorized {
					t.Fatalf("status=%d body=%s, want 401", code, body)
				}
				if len(list) != 0 {
					t.Fatalf("stored %d events after a 401, want 0", len(list))
				}
				if strings.Contains(body, v.Secret) {
					t.Fatalf("401 body %s contains the secret", body)
				}
				return
			}
			if code != http.StatusOK {
				t.Fatalf("status=%d body=%s, want 200", code, body)
			}
			if v.ExpectedReply != nil {
				if body != v.ExpectedReply.Body || contentType != v.ExpectedReply.ContentType {
					t.Fatalf("answer %q (%s), want the handshake's %q (%s)", body, contentType, v.ExpectedReply.Body, v.ExpectedReply.ContentType)
				}
				if len(list) != 0 {
					t.Fatalf("a handshake stored %d events, want 0", len(list))
				}
				return
			}
			if strings.Contains(v.Body, `"url_verification"`) {
				var ch struct{ Challenge string }
				if err := json.Unmarshal([]byte(body), &ch); err != nil || ch.Challenge == "" || !strings.Contains(v.Body, ch.Challenge) {
					t.Fatalf("answer %s, want the request's challenge", body)
				}
				if len(list) != 0 {
					t.Fatalf("url_verification stored %d events, want 0", len(list))
				}
				return
			}
			a := decodeAnswer(t, body)
			if a.Status != "accepted" || len(list) != 1 || list[0].EventID != a.EventID {
				t.Fatalf("answer %s, stored %+v: want accepted and one stored event with its id", body, list)
			}
			if v.ExpectedEventID != nil && a.EventID != *v.ExpectedEventID {
				t.Fatalf("event id %q, want %q", a.EventID, *v.ExpectedEventID)
			}
			e, err := tm.DB.GetEvent(context.Background(), list[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			if string(e.Body) != v.Body {
				t.Fatalf("stored body %q, want %q", e.Body, v.Body)
			}
		})
	}
	if ran < 30 {
		t.Fatalf("ran %d vector cases, want at least 30", ran)
	}
}

// postCase sends a case's request, and returns the answer's status, body
// and content type.
func postCase(t *testing.T, url string, v vector) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(v.Body))
	if err != nil {
		t.Fatal(err)
	}
	for k, val := range v.Headers {
		req.Header.Set(k, val)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("post %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header.Get("Content-Type")
}

func TestServe_OneServePerStore(t *testing.T) {
	first := MustRunMain(t, "", "")
	cfg := first.Config
	cfg.Server.Listen = "127.0.0.1:0"
	second := hookbox.NewMain(cfg, zerolog.Nop())
	err := second.Run(context.Background())
	if err == nil {
		second.Close()
		t.Fatal("second serve on the same store started, want it refused")
	}
	if !strings.Contains(err.Error(), "in use by another hookbox serve") {
		t.Fatalf("err=%q, want it to say the store is in use", err)
	}
	// Once the first stops, the store is free again.
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	third := hookbox.NewMain(cfg, zerolog.Nop())
	if err := third.Run(context.Background()); err != nil {
		t.Fatalf("serve after the first stopped: %v", err)
	}
	third.Close()
}
