package refetch_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/refetch"
)

// fakeAPI is a provider's API on 127.0.0.1: it answers each path with the
// resource's current state, records every request, and can be told to
// answer otherwise.
type fakeAPI struct {
	*httptest.Server
	mu       sync.Mutex
	state    map[string]string // path (with query) → body
	requests []*http.Request
	hits     []time.Time
	answer   func(w http.ResponseWriter, r *http.Request) bool // true: answered
	inFlight map[string]int
	maxIn    map[string]int
	all      int // fetches under way, of any path
	maxAll   int
	delay    time.Duration
}

func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	a := &fakeAPI{state: map[string]string{}, inFlight: map[string]int{}, maxIn: map[string]int{}}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.requests = append(a.requests, r.Clone(context.Background()))
		a.hits = append(a.hits, time.Now())
		key := r.URL.RequestURI()
		a.inFlight[key]++
		a.maxIn[key] = max(a.maxIn[key], a.inFlight[key])
		a.all++
		a.maxAll = max(a.maxAll, a.all)
		answer, delay := a.answer, a.delay
		body, ok := a.state[key]
		a.mu.Unlock()
		defer func() {
			a.mu.Lock()
			a.inFlight[key]--
			a.all--
			a.mu.Unlock()
		}()
		if delay > 0 {
			time.Sleep(delay)
		}
		if answer != nil && answer(w, r) {
			return
		}
		if !ok {
			http.Error(w, `{"error":"no such resource"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *fakeAPI) set(path, body string) {
	a.mu.Lock()
	a.state[path] = body
	a.mu.Unlock()
}

func (a *fakeAPI) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.requests)
}

func (a *fakeAPI) last(t *testing.T) *http.Request {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.requests) == 0 {
		t.Fatal("the API got no request")
	}
	return a.requests[len(a.requests)-1]
}

func fetcher(t *testing.T, set *refetch.Set, c refetch.Config) *refetch.Fetcher {
	t.Helper()
	if c.Timeout == 0 {
		c.Timeout = 5 * time.Second
	}
	f, err := set.Fetcher(c)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFetch_Presets(t *testing.T) {
	api := newFakeAPI(t)
	set := refetch.NewSet()
	cases := []struct {
		name, preset, typ string
		header            http.Header
		body              string
		path, state       string
		auth              string // header: value the API must get
		also              map[string]string
	}{
		{
			name: "stripe payment_intent", preset: "stripe", typ: "payment_intent.succeeded",
			body: `{"id":"evt_1","object":"event","api_version":"2024-06-20","created":1700000000,"type":"payment_intent.succeeded",
				"data":{"object":{"id":"pi_3MtwBw","object":"payment_intent","status":"processing"}}}`,
			path: "/v1/payment_intents/pi_3MtwBw", state: `{"id":"pi_3MtwBw","object":"payment_intent","status":"succeeded"}`,
			auth: "Authorization: Bearer sk_test_123",
			also: map[string]string{"Stripe-Version": "2024-06-20"},
		},
		{
			name: "stripe checkout.session of a connected account", preset: "stripe", typ: "checkout.session.completed",
			body: `{"id":"evt_2","object":"event","account":"acct_1Abc","created":1700000001,
				"data":{"object":{"id":"cs_test_a1","object":"checkout.session"}}}`,
			path: "/v1/checkout/sessions/cs_test_a1", state: `{"id":"cs_test_a1","status":"complete"}`,
			auth: "Authorization: Bearer sk_test_123",
			also: map[string]string{"Stripe-Account": "acct_1Abc"},
		},
		{
			name: "stripe thin event", preset: "stripe", typ: "v1.billing.meter.error_report_triggered",
			body: `{"id":"evt_test_65R","object":"v2.core.event","type":"v1.billing.meter.error_report_triggered","created":"2024-09-17T06:20:52.246Z",
				"related_object":{"id":"mtr_test_61R","type":"billing.meter","url":"/v1/billing/meters/mtr_test_61R"}}`,
			path: "/v1/billing/meters/mtr_test_61R", state: `{"id":"mtr_test_61R","status":"active"}`,
			auth: "Authorization: Bearer sk_test_123",
		},
		{
			name: "mercadopago payment", preset: "mercadopago", typ: "payment.updated",
			body: `{"action":"payment.updated","api_version":"v1","data":{"id":"123456789012"},"date_created":"2024-05-01T10:00:00Z","type":"payment","user_id":"1"}`,
			path: "/v1/payments/123456789012", state: `{"id":123456789012,"status":"refunded"}`,
			auth: "Authorization: Bearer APP_USR-1",
		},
		{
			name: "shopify order", preset: "shopify", typ: "orders/updated",
			header: http.Header{"X-Shopify-Shop-Domain": {"example.myshopify.com"}, "X-Shopify-Api-Version": {"2024-10"}},
			body:   `{"id":820982911946154508,"admin_graphql_api_id":"gid://shopify/Order/820982911946154508","updated_at":"2024-01-01T10:00:00-05:00"}`,
			path:   "/admin/api/2024-10/orders/820982911946154508.json", state: `{"order":{"id":820982911946154508,"financial_status":"refunded"}}`,
			auth: "X-Shopify-Access-Token: shpat_1",
		},
		{
			name: "github issue", preset: "github", typ: "issues",
			body: `{"action":"edited","issue":{"id":1,"number":7,"url":"https://api.github.com/repos/octo/hello/issues/7","title":"old"}}`,
			path: "/repos/octo/hello/issues/7", state: `{"number":7,"title":"new"}`,
			auth: "Authorization: Bearer ghp_1",
			also: map[string]string{"X-Github-Api-Version": "2022-11-28"},
		},
	}
	creds := map[string]string{"stripe": "sk_test_123", "mercadopago": "APP_USR-1", "shopify": "shpat_1", "github": "ghp_1"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			api.set(c.path, c.state)
			f := fetcher(t, set, refetch.Config{Target: c.name, Preset: c.preset, BaseURL: api.URL, Credential: creds[c.preset]})
			res, err := f.Fetch(context.Background(), refetch.Event{Type: c.typ, Header: c.header, Body: []byte(c.body)})
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if string(res.Body) != c.state || res.Gone {
				t.Fatalf("body %q (gone %t), want the API's current state %q", res.Body, res.Gone, c.state)
			}
			r := api.last(t)
			if r.URL.Path != c.path || r.Method != http.MethodGet {
				t.Errorf("request %s %s, want GET %s", r.Method, r.URL.Path, c.path)
			}
			name, value, _ := strings.Cut(c.auth, ": ")
			if got := r.Header.Get(name); got != value {
				t.Errorf("%s = %q, want %q", name, got, value)
			}
			for k, v := range c.also {
				if got := r.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestFetch_Template(t *testing.T) {
	api := newFakeAPI(t)
	api.set("/orders/a%2Fb%20c?expand=x+y%26z", `{"id":"a/b c","state":"shipped"}`)
	tmpl, err := refetch.ParseTemplate(api.URL + "/orders/{json:data.id}?expand={json:data.expand}")
	if err != nil {
		t.Fatal(err)
	}
	f := fetcher(t, refetch.NewSet(), refetch.Config{Target: "t", Template: tmpl, Credential: "tok_1"})
	res, err := f.Fetch(context.Background(), refetch.Event{Body: []byte(`{"data":{"id":"a/b c","expand":"x y&z"}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Body) != `{"id":"a/b c","state":"shipped"}` {
		t.Errorf("body %q", res.Body)
	}
	r := api.last(t)
	if got := r.URL.RawPath + "?" + r.URL.RawQuery; got != "/orders/a%2Fb%20c?expand=x+y%26z" {
		t.Errorf("fetched %q, want each value escaped", got)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer tok_1" {
		t.Errorf("Authorization = %q", got)
	}

	// A value the event lacks: nothing to fetch, ever.
	n := api.count()
	_, err = f.Fetch(context.Background(), refetch.Event{Body: []byte(`{"data":{}}`)})
	var fe *refetch.Error
	if !errors.As(err, &fe) || !fe.Permanent || !strings.Contains(fe.Msg, "{json:data.id}") {
		t.Errorf("missing placeholder: %v, want a permanent error naming it", err)
	}
	if api.count() != n {
		t.Errorf("the API was called for an event without the value")
	}
}

func TestParseTemplate_Errors(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{"https://api.example.com/orders/{json:id", "without its }"},
		{"https://api.example.com/orders/json:id}", "without its {"},
		{"https://api.example.com/orders/{header:X-Id}", "want {json:a.b}"},
		{"https://api.example.com/orders/{json:}", "placeholder"},
		{"https://{json:shop}.example.com/orders/1", "host"},
		{"https://api.example.com{json:id}", "host"},
		{"ftp://api.example.com/{json:id}", "http"},
		{"/orders/{json:id}", "absolute"},
		{"https://user:pw@api.example.com/{json:id}", "user"},
	} {
		if _, err := refetch.ParseTemplate(c.raw); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseTemplate(%q) = %v, want an error saying %q", c.raw, err, c.want)
		}
	}
	for _, ok := range []string{"https://api.example.com/orders/{json:data.id}", "http://127.0.0.1:9/x?id={json:id,json:data.id}"} {
		if _, err := refetch.ParseTemplate(ok); err != nil {
			t.Errorf("ParseTemplate(%q): %v", ok, err)
		}
	}
}

// A 404 (or 410) is the resource gone: a result, not a failure, so the
// webhook's own body is delivered and a deletion is never dropped.
func TestFetch_GoneAndFailures(t *testing.T) {
	api := newFakeAPI(t)
	set := refetch.NewSet()
	f := fetcher(t, set, refetch.Config{Target: "t", Preset: "stripe", BaseURL: api.URL, Credential: "sk_test_secret42"})
	ev := func(id string) refetch.Event {
		return refetch.Event{Body: []byte(`{"id":"evt","data":{"object":{"id":"` + id + `","object":"customer"}}}`)}
	}
	res, err := f.Fetch(context.Background(), ev("cus_deleted"))
	if err != nil || !res.Gone || res.Body != nil {
		t.Fatalf("404: %+v, %v; want Gone", res, err)
	}
	if got := set.Counters.Gone.Load(); got != 1 {
		t.Errorf("gone counted %d, want 1", got)
	}

	api.answer = func(w http.ResponseWriter, r *http.Request) bool {
		switch r.URL.Path {
		case "/v1/customers/cus_500":
			http.Error(w, `{"error":{"message":"Invalid API Key provided: sk_test_secret42"}}`, http.StatusInternalServerError)
		case "/v1/customers/cus_moved":
			http.Redirect(w, r, "http://example.com/elsewhere", http.StatusFound)
		default:
			return false
		}
		return true
	}
	_, err = f.Fetch(context.Background(), ev("cus_500"))
	var fe *refetch.Error
	if !errors.As(err, &fe) || fe.Status != 500 || !strings.Contains(fe.Msg, "status 500") || fe.Permanent {
		t.Fatalf("500: %v, want a retryable error naming the status", err)
	}
	if strings.Contains(fe.Msg+fe.Output, "sk_test_secret42") {
		t.Errorf("the credential is in the attempt's record: %q %q", fe.Msg, fe.Output)
	}
	_, err = f.Fetch(context.Background(), ev("cus_moved"))
	if !errors.As(err, &fe) || fe.Status != 302 || !strings.Contains(fe.Msg, "redirects are not followed") {
		t.Fatalf("302: %v", err)
	}
	if got := set.Counters.Failed.Load(); got != 2 {
		t.Errorf("failed counted %d, want 2", got)
	}

	// An object without a retrieve endpoint, and a payload that names
	// another host: nothing is fetched, and no retry will change it.
	n := api.count()
	for _, c := range []struct {
		preset, typ, body string
	}{
		{"stripe", "balance.available", `{"data":{"object":{"object":"balance"}}}`},
		{"stripe", "v1.x", `{"related_object":{"url":"https://evil.example/v1/x"}}`},
		{"stripe", "v1.x", `{"related_object":{"url":"/v1/../../x"}}`},
		{"github", "issues", `{"issue":{"url":"https://evil.example/repos/o/r/issues/1"}}`},
		{"github", "push", `{"ref":"refs/heads/main"}`},
		{"shopify", "orders/updated", `{"id":1}`}, // no shop header, no base
	} {
		base := api.URL
		if c.preset == "shopify" {
			base = ""
		}
		g := fetcher(t, set, refetch.Config{Target: "x", Preset: c.preset, BaseURL: base, Credential: "k"})
		_, err := g.Fetch(context.Background(), refetch.Event{Type: c.typ, Header: http.Header{"X-Shopify-Shop-Domain": {"evil.example"}}, Body: []byte(c.body)})
		if !errors.As(err, &fe) || !fe.Permanent {
			t.Errorf("%s %s: %v, want a permanent error", c.preset, c.body, err)
		}
	}
	if api.count() != n {
		t.Errorf("%d requests for events with nothing to fetch", api.count()-n)
	}
}

// A 429 holds every fetch of the credential until its Retry-After: the
// attempt fails asking for a retry then, and the others wait too, without
// a request, until the time has passed.
func TestFetch_429RetryAfter(t *testing.T) {
	api := newFakeAPI(t)
	api.set("/v1/charges/ch_1", `{"id":"ch_1"}`)
	var limited atomic.Bool
	limited.Store(true)
	api.answer = func(w http.ResponseWriter, r *http.Request) bool {
		if limited.Load() {
			w.Header().Set("Retry-After", "7")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return true
		}
		return false
	}
	now := time.Now()
	var mu sync.Mutex
	set := refetch.NewSet()
	set.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	ev := refetch.Event{Body: []byte(`{"data":{"object":{"id":"ch_1","object":"charge"}}}`)}
	a := fetcher(t, set, refetch.Config{Target: "a", Preset: "stripe", BaseURL: api.URL, Credential: "sk_live_1", Rate: refetch.Rate{N: 1000, Per: time.Second}})
	b := fetcher(t, set, refetch.Config{Target: "b", Preset: "stripe", BaseURL: api.URL, Credential: "sk_live_1", Rate: refetch.Rate{N: 1000, Per: time.Second}})

	_, err := a.Fetch(context.Background(), ev)
	var fe *refetch.Error
	if !errors.As(err, &fe) || fe.Status != 429 || fe.RetryAfter != 7*time.Second || !fe.RateLimited {
		t.Fatalf("429: %v (%+v), want a rate-limited failure retrying in 7s", err, fe)
	}
	limited.Store(false)
	advance(3 * time.Second)
	n := api.count()
	_, err = b.Fetch(context.Background(), ev) // another target, same key
	if !errors.As(err, &fe) || fe.RetryAfter != 4*time.Second || !fe.RateLimited {
		t.Fatalf("within the hold: %v, want a failure retrying in the 4s left", err)
	}
	if api.count() != n {
		t.Fatalf("a request was sent within the provider's Retry-After")
	}
	advance(4 * time.Second)
	if res, err := b.Fetch(context.Background(), ev); err != nil || string(res.Body) != `{"id":"ch_1"}` {
		t.Fatalf("after the hold: %q, %v", res.Body, err)
	}
	if got := set.Counters.RateLimited.Load(); got != 2 {
		t.Errorf("rate_limited counted %d, want 2", got)
	}
	by := set.ByTarget()
	if a, b := by["a"], by["b"]; a.RateLimited.Load() != 1 || a.OK.Load() != 0 || b.RateLimited.Load() != 1 || b.OK.Load() != 1 {
		t.Errorf("by target: a %d rate limited, %d ok; b %d, %d; want 1, 0; 1, 1", a.RateLimited.Load(), a.OK.Load(), b.RateLimited.Load(), b.OK.Load())
	}
}

// Under load from many workers and two targets sharing a key, the API
// never sees more than the rate in any second; a target with another key
// has its own rate.
func TestFetch_RateLimitUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 3 s")
	}
	api := newFakeAPI(t)
	api.set("/v1/charges/ch_1", `{"id":"ch_1"}`)
	api.set("/v1/charges/ch_2", `{"id":"ch_2"}`)
	set := refetch.NewSet()
	const rate = 20
	shared := []*refetch.Fetcher{
		fetcher(t, set, refetch.Config{Target: "a", Preset: "stripe", BaseURL: api.URL, Credential: "sk_live_shared", Rate: refetch.Rate{N: rate, Per: time.Second}}),
		fetcher(t, set, refetch.Config{Target: "b", Preset: "stripe", BaseURL: api.URL, Credential: "sk_live_shared", Rate: refetch.Rate{N: rate, Per: time.Second}}),
	}
	other := fetcher(t, set, refetch.Config{Target: "c", Preset: "stripe", BaseURL: api.URL, Credential: "sk_live_other", Rate: refetch.Rate{N: rate, Per: time.Second}})
	ev := func(id string) refetch.Event {
		return refetch.Event{Body: []byte(`{"data":{"object":{"id":"` + id + `","object":"charge"}}}`)}
	}

	const run = 3 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	var sharedOK, otherOK atomic.Int64
	var wg sync.WaitGroup
	for w := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				var err error
				if w%3 == 2 {
					if _, err = other.Fetch(ctx, ev("ch_2")); err == nil {
						otherOK.Add(1)
					}
				} else if _, err = shared[w%2].Fetch(ctx, ev("ch_1")); err == nil {
					sharedOK.Add(1)
				}
			}
		}()
	}
	wg.Wait()

	api.mu.Lock()
	var ones, twos []time.Time
	for i, r := range api.requests {
		if r.URL.Path == "/v1/charges/ch_1" {
			ones = append(ones, api.hits[i])
		} else {
			twos = append(twos, api.hits[i])
		}
	}
	api.mu.Unlock()
	for name, hits := range map[string][]time.Time{"shared key": ones, "other key": twos} {
		// hookbox spaces the fetches' starts; the API counts their
		// arrivals, which scheduling on a loaded machine shifts by tens of
		// milliseconds. So: in every window of one second, at most a
		// quarter more than the rate (without the bucket: thousands), and
		// over the run about rate a second.
		for i := range hits {
			j := i
			for j < len(hits) && hits[j].Sub(hits[i]) < time.Second {
				j++
			}
			if j-i > rate+rate/4 {
				t.Fatalf("%s: %d fetches within one second from %s, want at most %d", name, j-i, hits[i].Format("15:04:05.000"), rate+rate/4)
			}
		}
		// The lower bound only shows the run fetched at all, however
		// loaded the machine.
		if want := int(run.Seconds() * rate); len(hits) < want/4 || len(hits) > want+2 {
			t.Errorf("%s: %d fetches in %s, want about %d", name, len(hits), run, want)
		}
	}
	t.Logf("shared key: %d fetches (%d delivered), other key: %d (%d)", len(ones), sharedOK.Load(), len(twos), otherOK.Load())
}

// Fetches of one resource run one at a time; of others, at once.
func TestFetch_OneAtATimePerKey(t *testing.T) {
	api := newFakeAPI(t)
	api.delay = 50 * time.Millisecond
	for _, id := range []string{"pi_1", "pi_2", "pi_3"} {
		api.set("/v1/payment_intents/"+id, `{}`)
	}
	f := fetcher(t, refetch.NewSet(), refetch.Config{Target: "t", Preset: "stripe", BaseURL: api.URL, Credential: "k", Rate: refetch.Rate{N: 1000000, Per: time.Second}})
	var wg sync.WaitGroup
	for i := range 12 {
		id := []string{"pi_1", "pi_2", "pi_3"}[i%3]
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.Fetch(context.Background(), refetch.Event{Key: id, Body: []byte(`{"data":{"object":{"id":"` + id + `","object":"payment_intent"}}}`)})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	api.mu.Lock()
	defer api.mu.Unlock()
	for path, n := range api.maxIn {
		if n != 1 {
			t.Errorf("%s: %d fetches at once, want 1", path, n)
		}
	}
	if api.maxAll < 2 {
		t.Errorf("at most %d fetch at once over 3 keys: the keys did not run side by side", api.maxAll)
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]time.Duration{"25/s": 40 * time.Millisecond, "600/m": 100 * time.Millisecond, "5000/h": 720 * time.Millisecond} {
		r, err := refetch.ParseRate(in)
		if err != nil || r.Interval() != want || r.String() != in {
			t.Errorf("ParseRate(%q) = %v (%s), %v; want interval %s", in, r, r.Interval(), err, want)
		}
	}
	for _, bad := range []string{"", "25", "0/s", "-1/s", "1.5/s", "25/d", "x/s"} {
		if _, err := refetch.ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) accepted", bad)
		}
	}
}

// The preset's published limit is the default: Stripe's test keys have
// a lower one.
func TestFetcher_DefaultRate(t *testing.T) {
	set := refetch.NewSet()
	for _, c := range []struct {
		preset, cred, want string
	}{
		{"stripe", "sk_test_1", "25/s"}, {"stripe", "rk_test_1", "25/s"}, {"stripe", "sk_live_1", "100/s"},
		{"shopify", "shpat_1", "2/s"}, {"github", "ghp_1", "5000/h"}, {"mercadopago", "APP_USR-1", "10/s"},
	} {
		f := fetcher(t, set, refetch.Config{Target: c.preset + c.cred, Preset: c.preset, Credential: c.cred})
		if got := f.Rate().String(); got != c.want {
			t.Errorf("%s with %s: rate %s, want %s", c.preset, c.cred, got, c.want)
		}
	}
	if _, err := set.Fetcher(refetch.Config{Preset: "slack", Credential: "x"}); err == nil || !strings.Contains(err.Error(), "stripe") {
		t.Errorf("a preset without a fetch API: %v", err)
	}
}

// One fetch over loopback, the bucket and the resource's turn included:
// what refetch adds to an attempt before the provider's own latency.
func BenchmarkFetch(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"pi_1","object":"payment_intent","status":"succeeded","amount":2000}`)
	}))
	defer srv.Close()
	f, err := refetch.NewSet().Fetcher(refetch.Config{Target: "t", Preset: "stripe", BaseURL: srv.URL, Credential: "sk_live_x",
		Rate: refetch.Rate{N: 1000000, Per: time.Second}, Timeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	ev := refetch.Event{Key: "pi_1", Body: []byte(`{"id":"evt_1","object":"event","api_version":"2024-06-20","created":1,"data":{"object":{"id":"pi_1","object":"payment_intent"}}}`)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Fetch(context.Background(), ev); err != nil {
			b.Fatal(err)
		}
	}
}
