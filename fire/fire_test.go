package fire_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/fire"
	"hookbox/provider"
)

const stripeSecret = "whsec_fire_test"

// shop is a Stripe webhook handler written the way handlers get written:
// its side effect is counted per event id, and it keeps each resource at
// the version of the event it applied last. Its flaws are switched on one
// at a time.
type shop struct {
	t        *testing.T
	verifier provider.Verifier

	// checkThenAct: the duplicate check and the write are apart, with
	// this long between them and no lock (SELECT, then INSERT, without a
	// unique constraint).
	checkThenAct time.Duration
	// slow: the work takes this long before the answer, and the check for
	// a duplicate is made before it, the mark after.
	slow time.Duration
	// restarts: the handler's memory of seen events is lost after each
	// request (it dedupes in memory, and restarts between deliveries).
	restarts bool
	// versionCheck: an event older than the resource's version is not
	// applied.
	versionCheck bool

	mu      sync.Mutex
	seen    map[string]bool
	effects map[string]int
	version map[string]int64
}

func newShop(t *testing.T, configure func(*shop)) (hook, count string) {
	t.Helper()
	v, err := provider.New(provider.Options{Scheme: "stripe", Secrets: []string{stripeSecret}})
	if err != nil {
		t.Fatal(err)
	}
	s := &shop{t: t, verifier: v, seen: map[string]bool{}, effects: map[string]int{}, version: map[string]int64{}}
	if configure != nil {
		configure(s)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /webhooks/stripe", s.hook)
	mux.HandleFunc("GET /count", s.count)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/webhooks/stripe", srv.URL + "/count"
}

func (s *shop) hook(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := s.verifier.Verify(r.Header, body, time.Now()); err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var ev struct {
		ID      string `json:"id"`
		Created int64  `json:"created"`
		Data    struct {
			Object struct {
				ID string `json:"id"`
			} `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	apply := func() {
		s.effects[ev.ID]++
		res := ev.Data.Object.ID
		if !s.versionCheck || ev.Created > s.version[res] {
			s.version[res] = ev.Created
		}
	}
	switch {
	case s.checkThenAct > 0:
		s.mu.Lock()
		dup := s.seen[ev.ID]
		s.mu.Unlock()
		if !dup {
			time.Sleep(s.checkThenAct)
			s.mu.Lock()
			s.seen[ev.ID] = true
			apply()
			s.mu.Unlock()
		}
	case s.slow > 0:
		s.mu.Lock()
		dup := s.seen[ev.ID]
		s.mu.Unlock()
		time.Sleep(s.slow)
		s.mu.Lock()
		if !dup {
			s.seen[ev.ID] = true
			apply()
		}
		s.mu.Unlock()
	default:
		s.mu.Lock()
		if !s.seen[ev.ID] {
			s.seen[ev.ID] = true
			apply()
		}
		s.mu.Unlock()
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(`{"received":true}`))
	if s.restarts {
		s.mu.Lock()
		s.seen = map[string]bool{}
		s.mu.Unlock()
	}
}

func (s *shop) count(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, res := r.URL.Query().Get("event_id"), r.URL.Query().Get("resource_id")
	v := any(nil)
	if n, ok := s.version[res]; ok {
		v = n
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"count": s.effects[id], "version": v})
}

// runner fires Stripe's first sample at url, with quick settings.
func runner(t *testing.T, url, probe string) *fire.Runner {
	t.Helper()
	p, _ := provider.Lookup("stripe")
	signer, err := provider.NewSigner(provider.Options{Scheme: "stripe", Secrets: []string{stripeSecret}})
	if err != nil {
		t.Fatal(err)
	}
	r := &fire.Runner{
		URL: url, Provider: p, Options: provider.Options{Scheme: "stripe"}, Signer: signer,
		Sample: p.Samples[0], Template: p.Samples[0].Body(),
		Timeout: 2 * time.Second, N: 20, Speed: 1e7, Wait: 3 * time.Second,
	}
	if probe != "" {
		pr, err := fire.NewURLProbe(probe)
		if err != nil {
			t.Fatal(err)
		}
		r.Probe = pr
	}
	return r
}

// results runs scenarios and returns their results by name.
func results(t *testing.T, r *fire.Runner, scenarios ...string) map[string]fire.Result {
	t.Helper()
	if len(scenarios) == 0 {
		scenarios = fire.Scenarios
	}
	rs, err := r.Run(context.Background(), scenarios)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]fire.Result{}
	for _, res := range rs {
		out[res.Scenario] = res
	}
	if len(out) != len(scenarios) {
		t.Fatalf("%d results for %d scenarios", len(out), len(scenarios))
	}
	return out
}

func wantVerdict(t *testing.T, rs map[string]fire.Result, scenario, want string) {
	t.Helper()
	if got := rs[scenario]; got.Verdict != want {
		var b bytes.Buffer
		_ = fire.WriteJSON(&b, []fire.Result{got})
		t.Errorf("%s: %s, want %s\n%s", scenario, got.Verdict, want, b.String())
	}
}

// A handler that verifies, dedupes under a lock and checks versions
// survives every scenario.
func TestRunner_CorrectHandler(t *testing.T) {
	t.Parallel()
	hook, count := newShop(t, func(s *shop) { s.versionCheck = true })
	rs := results(t, runner(t, hook, count))
	for _, name := range fire.Scenarios {
		wantVerdict(t, rs, name, fire.OK)
	}
	if r := rs[fire.DupPar]; len(r.Answers) != 20 || !r.InTime {
		t.Errorf("dup-par: %d answers, in time %t; want 20 in time", len(r.Answers), r.InTime)
	}
	if r := rs[fire.Storm]; len(r.Answers) != 7 {
		t.Errorf("storm: %d attempts, want Stripe's schedule: 1 and 6 retries", len(r.Answers))
	}
	if r := rs[fire.LostResponse]; !r.Answers[0].Dropped || r.Answers[0].Due || !r.Answers[1].OK() {
		t.Errorf("lost-response answers: %+v", r.Answers)
	}
	// Each scenario's event and resource are its own.
	ids, resources := map[string]bool{}, map[string]bool{}
	for _, r := range rs {
		if resources[r.ResourceID] {
			t.Errorf("resource %s in two scenarios", r.ResourceID)
		}
		resources[r.ResourceID] = true
		for _, e := range r.Events {
			if ids[e.ID] {
				t.Errorf("event %s in two scenarios", e.ID)
			}
			ids[e.ID] = true
		}
	}
}

// SELECT, then INSERT, without a unique constraint: N copies at one
// instant all pass the check.
func TestRunner_CheckThenActIsDoubleInDupPar(t *testing.T) {
	t.Parallel()
	hook, count := newShop(t, func(s *shop) { s.checkThenAct = 50 * time.Millisecond })
	rs := results(t, runner(t, hook, count), fire.DupSeq, fire.DupPar)
	wantVerdict(t, rs, fire.DupPar, fire.Double)
	wantVerdict(t, rs, fire.DupSeq, fire.OK)
}

// The work takes longer than the provider waits: the provider sends the
// event again while the first is still being worked on, and both run.
func TestRunner_SlowHandlerIsDoubleInTimeout(t *testing.T) {
	t.Parallel()
	hook, count := newShop(t, func(s *shop) { s.slow = 600 * time.Millisecond })
	r := runner(t, hook, count)
	r.Timeout = 300 * time.Millisecond
	rs := results(t, r, fire.Timeout)
	wantVerdict(t, rs, fire.Timeout, fire.Double)
	res := rs[fire.Timeout]
	if len(res.Answers) != 2 || !res.Answers[0].TimedOut || res.Answers[0].Due || res.InTime {
		t.Errorf("answers %+v, in time %t; want a timed-out first attempt and a second one, late", res.Answers, res.InTime)
	}
}

// Deduping in memory loses what it saw when the handler restarts between
// two deliveries of the event.
func TestRunner_InMemoryDedupeAcrossRestartsIsDouble(t *testing.T) {
	t.Parallel()
	hook, count := newShop(t, func(s *shop) { s.restarts = true })
	rs := results(t, runner(t, hook, count), fire.DupSeq, fire.LostResponse)
	wantVerdict(t, rs, fire.DupSeq, fire.Double)
	wantVerdict(t, rs, fire.LostResponse, fire.Double)
}

// Applying every event as it comes leaves the resource at the older
// version when the older arrives last.
func TestRunner_NoVersionCheckIsStale(t *testing.T) {
	t.Parallel()
	hook, count := newShop(t, nil)
	rs := results(t, runner(t, hook, count), fire.OutOfOrder)
	wantVerdict(t, rs, fire.OutOfOrder, fire.Stale)
	if e := rs[fire.OutOfOrder].Events; len(e) != 2 || e[0].Version <= e[1].Version {
		t.Errorf("events %+v: want the newer sent first", e)
	}
}

// Without a probe, the answers alone are judged.
func TestRunner_NoProbe(t *testing.T) {
	t.Parallel()
	hook, _ := newShop(t, nil)
	rs := results(t, runner(t, hook, ""), fire.DupSeq, fire.OutOfOrder)
	wantVerdict(t, rs, fire.DupSeq, fire.Acked)
	wantVerdict(t, rs, fire.OutOfOrder, fire.Acked)
	if e := rs[fire.DupSeq].Events[0]; e.Effects != nil {
		t.Errorf("effects %d counted without a probe", *e.Effects)
	}
}

// A handler refusing the requests (here: another secret) fails every
// scenario, and a provider without retries skips the storm.
func TestRunner_RefusedAndSkipped(t *testing.T) {
	t.Parallel()
	hook, count := newShop(t, nil)
	r := runner(t, hook, count)
	r.Signer, _ = provider.NewSigner(provider.Options{Scheme: "stripe", Secrets: []string{"whsec_other"}})
	rs := results(t, r, fire.DupSeq)
	wantVerdict(t, rs, fire.DupSeq, fire.Lost)
	if d := rs[fire.DupSeq].Detail; !strings.Contains(d, "2 of 2 answers due were not a 2xx: 2×401") {
		t.Errorf("detail %q: want the 401s named", d)
	}
	gh, _ := provider.Lookup("github")
	r.Provider = gh
	rs = results(t, r, fire.Storm)
	wantVerdict(t, rs, fire.Storm, fire.Skip)
}

// Nothing listening: every answer is an error, the scenario FAIL.
func TestRunner_NothingListening(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/hook"
	srv.Close()
	rs := results(t, runner(t, url, ""), fire.DupSeq, fire.DupPar)
	wantVerdict(t, rs, fire.DupSeq, fire.Fail)
	wantVerdict(t, rs, fire.DupPar, fire.Fail)
	if a := rs[fire.DupSeq].Answers[0]; a.Status != 0 || !strings.Contains(a.Error, "connect") {
		t.Errorf("answer %+v: want a connect error", a)
	}
}

func TestRunner_Validate(t *testing.T) {
	hook, _ := newShop(t, nil)
	for name, change := range map[string]func(*fire.Runner){
		"relative URL":  func(r *fire.Runner) { r.URL = "/hooks/x" },
		"ftp":           func(r *fire.Runner) { r.URL = "ftp://127.0.0.1/x" },
		"n too big":     func(r *fire.Runner) { r.N = fire.MaxN + 1 },
		"n of one":      func(r *fire.Runner) { r.N = 1 },
		"timeout":       func(r *fire.Runner) { r.Timeout = 0 },
		"wait":          func(r *fire.Runner) { r.Wait = fire.MaxWait + 1 },
		"speed below 1": func(r *fire.Runner) { r.Speed = 0.5 },
		"storm too slow": func(r *fire.Runner) {
			r.Speed = 2 // Stripe's 63 hours, halved, is over MaxStorm
		},
		"unknown placeholder": func(r *fire.Runner) { r.Template = []byte(`{"id":"{{idd}}"}`) },
		"no id":               func(r *fire.Runner) { r.Template = []byte(`{"type":"x"}`) },
	} {
		r := runner(t, hook, "")
		change(r)
		if err := r.Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
	}
	if err := runner(t, hook, "").Validate(); err != nil {
		t.Errorf("the test's runner: %v", err)
	}
}

func TestParseScenarios(t *testing.T) {
	for in, want := range map[string]string{
		"all":                    strings.Join(fire.Scenarios, ","),
		"storm,dup-seq":          "dup-seq,storm",
		" dup-par , dup-par":     "dup-par",
		"out-of-order":           "out-of-order",
		"timeout,lost-response,": "",
		"dupseq":                 "",
	} {
		got, err := fire.ParseScenarios(in)
		if want == "" {
			if err == nil {
				t.Errorf("%q: %v, want an error", in, got)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != want {
			t.Errorf("%q: %v, %v; want %s", in, got, err, want)
		}
	}
}

func TestParseCount(t *testing.T) {
	for in, want := range map[string]fire.Count{
		"1":                                {N: 1},
		" 0\n":                             {N: 0},
		`{"count":2}`:                      {N: 2},
		`{"count":1,"version":1700000000}`: {N: 1, Version: "1700000000"},
		`{"count":1,"version":"2024-05-06T07:08:09Z"}`: {N: 1, Version: "2024-05-06T07:08:09Z"},
		`{"count":1,"version":null}`:                   {N: 1},
	} {
		if got, err := fire.ParseCount(in); err != nil || got != want {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "one", `{"count":-1}`, `{"count":1.5}`, `{"n":1}`, `{"count":1,"version":[1]}`, "1 2"} {
		if got, err := fire.ParseCount(bad); err == nil {
			t.Errorf("%q: %+v, want an error", bad, got)
		}
	}
}

// The JUnit report parses as JUnit XML: one suite, a case a scenario,
// failures and skips where the verdicts say.
func TestWriteJUnit(t *testing.T) {
	rs := []fire.Result{
		{Scenario: fire.DupSeq, Verdict: fire.OK, Elapsed: fire.Millis(time.Second)},
		{Scenario: fire.DupPar, Verdict: fire.Double, Detail: "the effect of event evt_1 ran 3 times"},
		{Scenario: fire.OutOfOrder, Verdict: fire.Acked, Detail: "no probe"},
		{Scenario: fire.Storm, Verdict: fire.Skip, Detail: "the provider does not retry"},
	}
	var b bytes.Buffer
	if err := fire.WriteJUnit(&b, "hookbox fire stripe", "hookbox.fire.stripe", rs); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Skipped  int    `xml:"skipped,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Type string `xml:"type,attr"`
				} `xml:"failure"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	s := doc.Suites[0]
	if len(doc.Suites) != 1 || s.Tests != 4 || s.Failures != 1 || s.Skipped != 1 || len(s.Cases) != 4 {
		t.Fatalf("suite %+v", s)
	}
	if s.Cases[1].Name != fire.DupPar || s.Cases[1].Failure == nil || s.Cases[1].Failure.Type != fire.Double || s.Cases[3].Skipped == nil || s.Cases[0].Failure != nil {
		t.Errorf("cases %+v", s.Cases)
	}
}

func TestWriteTable(t *testing.T) {
	one := 1
	rs := []fire.Result{
		{Scenario: fire.DupPar, Verdict: fire.OK, Timeout: fire.Millis(20 * time.Second), InTime: true, P99: fire.Millis(12 * time.Millisecond),
			Events: []fire.EventResult{{ID: "evt_1", Effects: &one}}, Answers: []fire.Answer{{Status: 200}, {Status: 200}, {TimedOut: true}}},
		{Scenario: fire.OutOfOrder, Verdict: fire.Stale, Detail: "the older version won", Version: "1700000000"},
	}
	var b bytes.Buffer
	if err := fire.WriteTable(&b, rs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"IN 20s", "2×200, timeout", "12ms", "out-of-order: STALE: the older version won"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	fmt.Fprint(io.Discard, out)
}

// Sentry sends each retry under a new Request-ID: a handler that dedupes
// on it runs a retried event twice, and fire, counting over every id the
// event was sent under, says so; one that dedupes on the body does not.
func TestRunner_SentryRetriesCarryNewIDs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, eventID, want string
	}{
		{"Request-ID", "", fire.Double},
		{"body", "body-sha256", fire.OK},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			effects := map[string]int{}
			mux := http.NewServeMux()
			mux.HandleFunc("POST /hook", func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				key := r.Header.Get("Request-ID")
				if c.eventID != "" {
					key = fmt.Sprintf("%x", sha256.Sum256(body))
				}
				mu.Lock()
				effects[key]++ // the handler's dedupe keeps it at one per key
				if effects[key] > 1 {
					effects[key] = 1
				}
				mu.Unlock()
			})
			mux.HandleFunc("GET /count", func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				fmt.Fprint(w, effects[r.URL.Query().Get("event_id")])
			})
			srv := httptest.NewServer(mux)
			t.Cleanup(srv.Close)
			p, _ := provider.Lookup("sentry")
			o := provider.Options{Scheme: "sentry", EventID: c.eventID}
			signer, _ := provider.NewSigner(provider.Options{Scheme: "sentry", Secrets: []string{"s"}})
			probe, _ := fire.NewURLProbe(srv.URL + "/count")
			r := &fire.Runner{URL: srv.URL + "/hook", Provider: p, Options: o, Signer: signer, Sample: p.Samples[0], Template: p.Samples[0].Body(),
				Timeout: 2 * time.Second, N: 5, Speed: 1e6, Wait: 2 * time.Second, Probe: probe}
			rs := results(t, r, fire.DupSeq)
			wantVerdict(t, rs, fire.DupSeq, c.want)
			if e := rs[fire.DupSeq].Events[0]; c.eventID == "" && len(e.SentAs) != 2 {
				t.Errorf("sent as %v, want two Request-IDs", e.SentAs)
			}
		})
	}
}
