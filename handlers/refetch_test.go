//go:build unix

package handlers_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/config"
	"hookbox/handlers"
	"hookbox/queue"
	"hookbox/refetch"
)

// received is what a URL target got.
type received struct {
	body, contentType, refetched string
}

func target(t *testing.T) (*httptest.Server, func() []received) {
	t.Helper()
	var mu sync.Mutex
	var got []received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, received{string(b), r.Header.Get("Content-Type"), r.Header.Get("Hookbox-Refetched")})
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv, func() []received { mu.Lock(); defer mu.Unlock(); return append([]received(nil), got...) }
}

func stripeJob(id string) *queue.Job {
	return &queue.Job{Event: 1, EventID: "evt_" + id, Source: "stripe", Type: "charge.updated", Attempt: 1, ReceivedAt: time.Now(),
		ContentType: "application/json; charset=utf-8",
		Body:        []byte(`{"id":"evt_` + id + `","type":"charge.updated","data":{"object":{"id":"` + id + `","object":"charge","status":"pending"}}}`)}
}

// Before each attempt, a target with refetch gets the resource as the API
// has it now, marked so; a gone resource, the webhook's own body marked
// gone; a failed fetch fails the attempt and the target sees nothing.
func TestTargets_Refetch(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk_test_k" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/v1/charges/ch_now":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"ch_now","status":"refunded"}`)
		case "/v1/charges/ch_gone":
			http.NotFound(w, r)
		default:
			http.Error(w, "down", http.StatusBadGateway)
		}
	}))
	defer api.Close()
	web, got := target(t)
	out := filepath.Join(t.TempDir(), "out")
	script := mustScript(t, `printf '%s ' "$HOOKBOX_REFETCHED" > `+out+`; cat >> `+out)
	cfg := config.Config{
		Sources: []config.Source{{Name: "stripe", Verify: "stripe"}},
		Targets: []config.Target{
			{Name: "web", Source: "stripe", URL: web.URL, Timeout: config.Duration(5 * time.Second), Refetch: "stripe", RefetchBaseURL: api.URL, RefetchCredential: "sk_test_k"},
			{Name: "cmd", Source: "stripe", Command: []string{script}, Timeout: config.Duration(5 * time.Second), Refetch: "stripe", RefetchBaseURL: api.URL, RefetchCredential: "sk_test_k"},
		},
	}
	set := refetch.NewSet()
	list, err := handlers.TargetsWith(cfg, "/var/lib/hookbox/hookbox.db", handlers.Options{Refetch: set})
	if err != nil {
		t.Fatal(err)
	}
	webT, cmdT := list[0], list[1]

	if o := webT.Handler.Handle(context.Background(), stripeJob("ch_now")); o.Err != nil {
		t.Fatalf("refetched delivery: %v", o.Err)
	}
	job := stripeJob("ch_gone")
	if o := webT.Handler.Handle(context.Background(), job); o.Err != nil {
		t.Fatalf("gone delivery: %v", o.Err)
	}
	want := []received{
		{`{"id":"ch_now","status":"refunded"}`, "application/json", "1"},
		{string(job.Body), job.ContentType, "gone"},
	}
	if g := got(); len(g) != 2 || g[0] != want[0] || g[1] != want[1] {
		t.Fatalf("the target got %+v, want %+v", g, want)
	}

	o := webT.Handler.Handle(context.Background(), stripeJob("ch_broken"))
	if o.Err == nil || !strings.Contains(o.Err.Error(), "status 502") || !strings.Contains(o.Err.Error(), "/v1/charges/ch_broken") {
		t.Errorf("failed fetch: %v, want an error naming the URL and the status", o.Err)
	}
	var pe *queue.PermanentError
	if errors.As(o.Err, &pe) {
		t.Errorf("a 502 of the API is permanent: %v", o.Err)
	}
	bal := stripeJob("x")
	bal.Body = []byte(`{"id":"evt_b","type":"balance.available","data":{"object":{"object":"balance"}}}`)
	if o := webT.Handler.Handle(context.Background(), bal); !errors.As(o.Err, &pe) {
		t.Errorf("an event with nothing to fetch: %v, want a permanent failure", o.Err)
	}
	if n := len(got()); n != 2 {
		t.Errorf("the target got %d deliveries, want none after the failed fetches", n)
	}

	if o := cmdT.Handler.Handle(context.Background(), stripeJob("ch_now")); o.Err != nil {
		t.Fatalf("command: %v (%s)", o.Err, o.Output)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := `1 {"id":"ch_now","status":"refunded"}`; string(b) != want {
		t.Errorf("the command got %q, want HOOKBOX_REFETCHED=1 and the fetched body", b)
	}
	if ok, gone, failed := set.Counters.OK.Load(), set.Counters.Gone.Load(), set.Counters.Failed.Load(); ok != 2 || gone != 1 || failed != 2 {
		t.Errorf("counted ok %d, gone %d, failed %d; want 2, 1, 2", ok, gone, failed)
	}
}

// Shopify's fetch needs the shop the webhook came from: a stored header,
// which the target loads.
func TestTargets_RefetchLoadsHeaders(t *testing.T) {
	var path, token string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, token = r.URL.Path, r.Header.Get("X-Shopify-Access-Token")
		io.WriteString(w, `{"order":{"id":42,"financial_status":"refunded"}}`)
	}))
	defer api.Close()
	web, got := target(t)
	cfg := config.Config{
		Sources: []config.Source{{Name: "shop", Verify: "shopify"}},
		Targets: []config.Target{{Name: "web", Source: "shop", URL: web.URL, Refetch: "shopify", RefetchBaseURL: api.URL, RefetchCredential: "shpat_x"}},
	}
	var asked int64
	list, err := handlers.TargetsWith(cfg, "", handlers.Options{Headers: func(_ context.Context, id int64) (http.Header, error) {
		asked = id
		return http.Header{"X-Shopify-Api-Version": {"2024-04"}, "X-Shopify-Shop-Domain": {"example.myshopify.com"}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	job := &queue.Job{Event: 77, EventID: "w1", Source: "shop", Type: "orders/updated", Attempt: 1, Body: []byte(`{"id":42,"financial_status":"paid"}`)}
	if o := list[0].Handler.Handle(context.Background(), job); o.Err != nil {
		t.Fatal(o.Err)
	}
	if asked != 77 || path != "/admin/api/2024-04/orders/42.json" || token != "shpat_x" {
		t.Errorf("headers of event %d, fetched %s with token %q", asked, path, token)
	}
	if g := got(); len(g) != 1 || g[0].body != `{"order":{"id":42,"financial_status":"refunded"}}` {
		t.Errorf("the target got %+v", g)
	}
}

// A 429 of the API fails the attempt with the API's Retry-After, which the
// pool then waits at least.
func TestTargets_Refetch429(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		http.Error(w, "too many", http.StatusTooManyRequests)
	}))
	defer api.Close()
	web, got := target(t)
	cfg := config.Config{
		Sources: []config.Source{{Name: "stripe", Verify: "stripe"}},
		Targets: []config.Target{{Name: "web", Source: "stripe", URL: web.URL, Refetch: "stripe", RefetchBaseURL: api.URL, RefetchCredential: "sk_live_k"}},
	}
	list, err := handlers.TargetsWith(cfg, "", handlers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o := list[0].Handler.Handle(context.Background(), stripeJob("ch_1"))
	if o.Err == nil || o.RetryAfter != 30*time.Second || !strings.Contains(o.Err.Error(), "status 429") {
		t.Errorf("outcome %+v (%v), want a failure naming the 429, retrying in 30s", o, o.Err)
	}
	if len(got()) != 0 {
		t.Errorf("the target was called after a failed fetch")
	}
}
