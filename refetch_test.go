package main_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/provider"
)

// fakeProvider is a provider's API on 127.0.0.1: each path answers the
// resource's current state, or 404; it records what it was asked.
type fakeProvider struct {
	*httptest.Server
	mu      sync.Mutex
	state   map[string]string
	fetches []fetchSeen
}

type fetchSeen struct{ path, auth string }

func newFakeProvider(t *testing.T, state map[string]string) *fakeProvider {
	t.Helper()
	f := &fakeProvider{state: state}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		auth := r.Header.Get("Authorization") + r.Header.Get("X-Shopify-Access-Token")
		f.fetches = append(f.fetches, fetchSeen{r.URL.Path, auth})
		body, ok := f.state[r.URL.Path]
		f.mu.Unlock()
		if !ok {
			http.Error(w, `{"error":"resource_missing"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeProvider) seen() []fetchSeen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fetchSeen(nil), f.fetches...)
}

// delivered is one request a URL target got.
type delivered struct{ eventID, body, refetched string }

// deliveries are what rt got, as a refetching target sees them.
func deliveries(rt *recordingTarget) []delivered {
	var out []delivered
	for _, h := range rt.Hits() {
		out = append(out, delivered{h.Header.Get("Hookbox-Event-Id"), string(h.Body), h.Header.Get("Hookbox-Refetched")})
	}
	return out
}

// refetchCase is the seed's case, as a provider causes it, for a target
// that refetches: the provider's API holds the resource as it is now
// (refunded); its events arrive out of order, the older copy (approved)
// last, as after a resend. Run it with another target's order, e.g.
// `order = "coalesce"` and a coalesce_wait longer than the two sends, to
// see both webhooks cost one fetch and one delivery.
type refetchCase struct {
	Preset string // the source's verify
	Secret string
	Header string // hmac: the signature's header
	// Source adds keys to the [[source]]; Target to the [[target]] (its
	// refetch keys, its order).
	Source, Target string
	// API is the fake API's state by path: the resource as it is now.
	API map[string]string
	// Events are the webhooks, in the order they are sent: their id, type
	// and body; Query, for the schemes that sign it (mercadopago).
	Events []caseEvent
}

type caseEvent struct{ ID, Type, Body, Query string }

// refetchRun is what a run of a refetchCase saw.
type refetchRun struct {
	api    *fakeProvider
	target *recordingTarget
	tm     *testMain
}

// runRefetch serves c's config, sends its events signed as the provider
// signs them, and waits until the target has had want deliveries.
func runRefetch(t *testing.T, c refetchCase, want int) refetchRun {
	t.Helper()
	api := newFakeProvider(t, c.API)
	target := newRecordingTarget(t, nil)
	cfg := fmt.Sprintf(`
[[source]]
name = "src"
verify = %q
secret = %q
%s

[[target]]
name = "app"
source = "src"
url = %q
timeout = "5s"
%s
`, c.Preset, c.Secret, c.Source, target.URL, strings.ReplaceAll(c.Target, "{api}", api.URL))
	tm := MustRunMain(t, cfg, "")
	p, _ := provider.Lookup(c.Preset)
	o := provider.Options{Scheme: c.Preset, Secrets: []string{c.Secret}, Header: c.Header}
	signer, err := provider.NewSigner(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range c.Events {
		u := tm.URL + "/hooks/src"
		if e.Query != "" {
			u += "?" + e.Query
		}
		r := &provider.Request{Method: http.MethodPost, URL: u, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(e.Body)}
		p.SetHeaders(o, r.Header, provider.Event{ID: e.ID, Type: e.Type, Attempt: 1})
		if err := signer.Sign(r, time.Now()); err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(http.MethodPost, r.URL, strings.NewReader(string(r.Body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = r.Header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"accepted"`) {
			t.Fatalf("sending %s: %d %s", e.ID, resp.StatusCode, b)
		}
	}
	waitFor(t, 15*time.Second, fmt.Sprintf("%d deliveries", want), func() bool { return len(deliveries(target)) >= want })
	return refetchRun{api: api, target: target, tm: tm}
}

const refetchKeyEnv = "HOOKBOX_TEST_REFETCH_KEY"

// Through a running serve, each preset's target gets the resource as the
// provider's API has it now, once for each webhook, whichever copy came
// last; the key goes to the API and nowhere else.
func TestServe_Refetch(t *testing.T) {
	const key = "sk_test_51NotARealKeyButSecret"
	t.Setenv(refetchKeyEnv, key)
	stripeEvent := func(id, typ string, created int, refunded bool) caseEvent {
		return caseEvent{ID: id, Type: typ, Body: fmt.Sprintf(`{"id":%q,"object":"event","api_version":"2024-06-20","created":%d,"type":%q,"data":{"object":{"id":"ch_3Mtw","object":"charge","refunded":%t}}}`, id, created, typ, refunded)}
	}
	githubEvent := func(id, title string) caseEvent {
		return caseEvent{ID: id, Type: "issues", Body: fmt.Sprintf(`{"action":"edited","issue":{"id":1,"number":7,"title":%q,"url":"https://api.github.com/repos/octo/hello/issues/7"}}`, title)}
	}
	shopifyEvent := func(id, status string) caseEvent {
		return caseEvent{ID: id, Type: "orders/updated", Body: fmt.Sprintf(`{"id":820982911946154508,"admin_graphql_api_id":"gid://shopify/Order/820982911946154508","financial_status":%q}`, status)}
	}
	mpEvent := func(id string) caseEvent {
		return caseEvent{ID: id, Type: "payment.updated", Query: "data.id=123456789012&type=payment",
			Body: `{"action":"payment.updated","api_version":"v1","data":{"id":"123456789012"},"date_created":"2024-05-01T10:00:00Z","type":"payment","user_id":"1"}`}
	}
	refetchKeys := "refetch_auth_env = \"" + refetchKeyEnv + "\"\nrefetch_base_url = \"{api}\"\n"
	for _, c := range []struct {
		name  string
		c     refetchCase
		path  string
		state string
		auth  string
	}{
		{"stripe", refetchCase{Preset: "stripe", Secret: "whsec_test", Target: "refetch = \"stripe\"\n" + refetchKeys,
			Events: []caseEvent{stripeEvent("evt_refunded", "charge.refunded", 200, true), stripeEvent("evt_approved", "charge.succeeded", 100, false)}},
			"/v1/charges/ch_3Mtw", `{"id":"ch_3Mtw","object":"charge","refunded":true}`, "Bearer " + key},
		{"mercadopago", refetchCase{Preset: "mercadopago", Secret: "mp-secret", Target: "refetch = \"mercadopago\"\n" + refetchKeys,
			Events: []caseEvent{mpEvent("bb56a2f1-0000-0000-0000-000000000002"), mpEvent("bb56a2f1-0000-0000-0000-000000000001")}},
			"/v1/payments/123456789012", `{"id":123456789012,"status":"refunded"}`, "Bearer " + key},
		{"shopify", refetchCase{Preset: "shopify", Secret: "shpss_test", Target: "refetch = \"shopify\"\n" + refetchKeys,
			Events: []caseEvent{shopifyEvent("b54557e4-0002", "refunded"), shopifyEvent("b54557e4-0001", "paid")}},
			"/admin/api/2025-07/orders/820982911946154508.json", `{"order":{"id":820982911946154508,"financial_status":"refunded"}}`, key},
		{"github", refetchCase{Preset: "github", Secret: "gh-secret", Target: "refetch = \"github\"\n" + refetchKeys,
			Events: []caseEvent{githubEvent("72d3162e-0002", "new"), githubEvent("72d3162e-0001", "old")}},
			"/repos/octo/hello/issues/7", `{"number":7,"title":"newest"}`, "Bearer " + key},
		{"refetch_url", refetchCase{Preset: "hmac", Secret: "hmac-secret", Header: "X-Signature", Source: "header = \"X-Signature\"\nevent_id = \"json:id\"\n",
			Target: "refetch_url = \"{api}/v2/things/{json:thing.id}?view={json:thing.view}\"\nrefetch_auth_env = \"" + refetchKeyEnv + "\"\n",
			Events: []caseEvent{{ID: "e2", Body: `{"id":"e2","thing":{"id":"th/1","view":"full","state":"new"}}`}, {ID: "e1", Body: `{"id":"e1","thing":{"id":"th/1","view":"full","state":"old"}}`}}},
			"/v2/things/th/1", `{"thing":"th/1","state":"newest"}`, "Bearer " + key},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.c.API = map[string]string{c.path: c.state}
			run := runRefetch(t, c.c, 2)
			got := deliveries(run.target)
			if len(got) != 2 {
				t.Fatalf("the target got %d deliveries, want 2", len(got))
			}
			for _, d := range got {
				if d.body != c.state || d.refetched != "1" {
					t.Errorf("delivery of %s: %q (Hookbox-Refetched %q), want the API's current state %q, marked 1", d.eventID, d.body, d.refetched, c.state)
				}
			}
			seen := run.api.seen()
			if len(seen) != 2 {
				t.Errorf("the API got %d fetches, want one per webhook (2)", len(seen))
			}
			for _, s := range seen {
				if s.auth != c.auth {
					t.Errorf("fetch %s with credential %q, want %q", s.path, s.auth, c.auth)
				}
			}
			run.tm.Close()
			events := cliRun(t, run.tm.Dir, "events", "--json")
			event := cliRun(t, run.tm.Dir, "event", "--json", "1")
			for where, text := range map[string]string{"serve's log": run.tm.Logs.String(), "events --json": events, "event --json": event} {
				if strings.Contains(text, key) {
					t.Errorf("the API key is in %s", where)
				}
			}
		})
	}
}

// A resource the API no longer has (a deleted customer) is delivered as
// the webhook's own body, marked gone; a failing API fails the attempt,
// naming the status, and the target sees nothing.
func TestServe_RefetchGoneAndFailing(t *testing.T) {
	t.Setenv(refetchKeyEnv, "sk_test_gone")
	body := `{"id":"evt_del","object":"event","created":300,"type":"customer.deleted","data":{"object":{"id":"cus_gone","object":"customer","deleted":true}}}`
	run := runRefetch(t, refetchCase{Preset: "stripe", Secret: "whsec_test",
		Target: "refetch = \"stripe\"\nrefetch_auth_env = \"" + refetchKeyEnv + "\"\nrefetch_base_url = \"{api}\"\n",
		API:    map[string]string{},
		Events: []caseEvent{{ID: "evt_del", Type: "customer.deleted", Body: body}}}, 1)
	got := deliveries(run.target)
	if len(got) != 1 || got[0].body != body || got[0].refetched != "gone" {
		t.Fatalf("the target got %+v, want the webhook's own body marked gone", got)
	}

	// The API down: a failed attempt naming the fetch and its status.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream down", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	target := newRecordingTarget(t, nil)
	tm := MustRunMain(t, fmt.Sprintf(`
[delivery]
backoff = "1h"
max_backoff = "1h"

[[source]]
name = "stripe"
verify = "stripe"
secret = "whsec_test"

[[target]]
name = "app"
source = "stripe"
url = %q
refetch = "stripe"
refetch_auth_env = %q
refetch_base_url = %q
`, target.URL, refetchKeyEnv, down.URL), "")
	b := []byte(`{"id":"evt_x","object":"event","created":1,"type":"charge.updated","data":{"object":{"id":"ch_x","object":"charge"}}}`)
	if code, resp := tm.Post("/hooks/stripe", map[string]string{"Stripe-Signature": stripeSig("whsec_test", time.Now(), b)}, b); code != 200 {
		t.Fatalf("post: %d %s", code, resp)
	}
	var out string
	waitFor(t, 10*time.Second, "a failed attempt", func() bool {
		out = cliRun(t, tm.Dir, "event", "1")
		return strings.Contains(out, "status 503")
	})
	if !strings.Contains(out, "refetch GET "+down.URL+"/v1/charges/ch_x: status 503") || !strings.Contains(out, "retrying") {
		t.Errorf("event 1:\n%s\nwant a retrying delivery whose attempt names the fetch and its status", out)
	}
	if n := len(deliveries(target)); n != 0 {
		t.Errorf("the target got %d deliveries while the API failed", n)
	}

	// An event naming nothing the API can fetch is dead at once.
	b = []byte(`{"id":"evt_bal","object":"event","created":2,"type":"balance.available","data":{"object":{"object":"balance"}}}`)
	if code, resp := tm.Post("/hooks/stripe", map[string]string{"Stripe-Signature": stripeSig("whsec_test", time.Now(), b)}, b); code != 200 {
		t.Fatalf("post: %d %s", code, resp)
	}
	waitFor(t, 10*time.Second, "a dead delivery", func() bool {
		out = cliRun(t, tm.Dir, "event", "2")
		return strings.Contains(out, "dead")
	})
	if !strings.Contains(out, "dead after 1 attempt(s) (permanent: refetch: nothing to fetch)") || !strings.Contains(out, "the event names no resource hookbox can fetch") {
		t.Errorf("event 2:\n%s\nwant dead at once, saying there was nothing to fetch", out)
	}
}

// serve refuses to start with a refetch key whose variable is unset,
// naming the key, as check does.
func TestServe_RefetchUnsetKey(t *testing.T) {
	dir := t.TempDir()
	cfg := dir + "/hookbox.toml"
	writeFile(t, cfg, fmt.Sprintf(`
[store]
path = %q

[[source]]
name = "stripe"
verify = "stripe"
secret = "whsec_test"

[[target]]
name = "app"
source = "stripe"
url = "http://127.0.0.1:9/"
refetch = "stripe"
refetch_auth_env = "HOOKBOX_TEST_UNSET_STRIPE_KEY"
`, dir+"/hookbox.db"))
	for _, cmd := range []string{"check", "serve"} {
		_, stderr, err := execute([]string{cmd, "--config", cfg}, func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error()+stderr, "target[app].refetch_auth_env") || !strings.Contains(err.Error()+stderr, "HOOKBOX_TEST_UNSET_STRIPE_KEY is unset") {
			t.Errorf("%s: %v %s, want an error naming target[app].refetch_auth_env", cmd, err, stderr)
		}
	}
}

// With coalesce and refetch, a burst of updates to one resource costs one
// fetch and one delivery of its current state: the older updates waiting
// in the lane are superseded before they run.
func TestServe_RefetchCoalesce(t *testing.T) {
	const key = "sk_test_51CoalescedKey"
	t.Setenv(refetchKeyEnv, key)
	var events []caseEvent
	for i := 1; i <= 6; i++ {
		id := fmt.Sprintf("evt_burst_%d", i)
		events = append(events, caseEvent{ID: id, Type: "charge.updated",
			Body: fmt.Sprintf(`{"id":%q,"object":"event","created":%d,"type":"charge.updated","data":{"object":{"id":"ch_burst","object":"charge","amount_refunded":%d}}}`, id, 1700000000+i, i)})
	}
	run := runRefetch(t, refetchCase{Preset: "stripe", Secret: "whsec_test",
		Target: "order = \"coalesce\"\ncoalesce_wait = \"1s\"\nrefetch = \"stripe\"\nrefetch_auth_env = \"" + refetchKeyEnv + "\"\nrefetch_base_url = \"{api}\"\n",
		API:    map[string]string{"/v1/charges/ch_burst": `{"id":"ch_burst","object":"charge","amount_refunded":6}`},
		Events: events}, 1)
	// Nothing else comes: the five older ones were superseded.
	waitFor(t, 10*time.Second, "the older updates skipped", func() bool {
		out := cliRun(t, run.tm.Dir, "events", "--json", "--status", "skipped")
		return strings.Count(out, "superseded") == 5
	})
	got := deliveries(run.target)
	if len(got) != 1 || got[0].eventID != "evt_burst_6" || got[0].body != `{"id":"ch_burst","object":"charge","amount_refunded":6}` || got[0].refetched != "1" {
		t.Fatalf("deliveries %+v, want one: the newest update, carrying the API's current state", got)
	}
	if got := run.api.seen(); len(got) != 1 || got[0].path != "/v1/charges/ch_burst" {
		t.Fatalf("fetches %+v, want one of the charge", got)
	}
}
