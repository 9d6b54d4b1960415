// Package fire sends webhooks signed exactly as a provider signs them to
// an endpoint, in the scenarios that break webhook handlers — the same
// event twice, many times at once, after a lost answer, after a timeout,
// out of order, and on the provider's whole retry schedule — and says, per
// scenario, what the endpoint answered, how fast, and, with a Prober that
// counts the handler's side effects, whether each event's effect ran once
// and the newest version won.
//
// Runner is the one type: its fields say what to send where, and Run
// runs scenarios and returns one Result each. Only Runner.URL is sent to
// (the Prober decides what it contacts); every scenario is bounded in
// requests and in time.
package fire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"hookbox/location"
	"hookbox/provider"
)

// The scenarios, in the order Run runs them for "all".
const (
	DupSeq       = "dup-seq"
	DupPar       = "dup-par"
	LostResponse = "lost-response"
	Timeout      = "timeout"
	OutOfOrder   = "out-of-order"
	Storm        = "storm"
)

// Scenarios lists every scenario.
var Scenarios = []string{DupSeq, DupPar, LostResponse, Timeout, OutOfOrder, Storm}

// ParseScenarios reads "all" or a comma-separated list of scenarios, and
// returns them in Scenarios' order, each once.
func ParseScenarios(s string) ([]string, error) {
	if strings.TrimSpace(s) == "all" {
		return slices.Clone(Scenarios), nil
	}
	want := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(Scenarios, name) {
			return nil, fmt.Errorf("unknown scenario %q (want all, or some of %s)", name, strings.Join(Scenarios, ", "))
		}
		want[name] = true
	}
	var out []string
	for _, name := range Scenarios {
		if want[name] {
			out = append(out, name)
		}
	}
	return out, nil
}

// Limits on a Runner, so a run is bounded in requests and in time.
const (
	MaxN       = 1000             // dup-par's requests
	MaxTimeout = 5 * time.Minute  // an answer's wait
	MaxWait    = 5 * time.Minute  // the probe's watch
	MaxStorm   = 10 * time.Minute // a compressed retry schedule
	// StormBudget is what the storm's schedule is compressed into when
	// Speed is zero, so that the scenario takes at most about 30 s.
	StormBudget = 25 * time.Second
)

// Verdicts of a scenario.
const (
	OK     = "ok"     // each event's effect ran once, the newest version won, every answer due was a 2xx
	Double = "DOUBLE" // an event's effect ran more than once
	Lost   = "LOST"   // an event's effect never ran
	Stale  = "STALE"  // the older version won
	Fail   = "FAIL"   // an answer due was not a 2xx (or came after the timeout), or the probe failed
	Acked  = "acked"  // every answer due was a 2xx; the effects were not counted (no probe, or no version to judge by)
	Skip   = "skip"   // not run: the provider does not do what the scenario imitates
)

// Failed reports whether a verdict makes a run fail.
func Failed(verdict string) bool {
	switch verdict {
	case Double, Lost, Stale, Fail:
		return true
	}
	return false
}

// Runner sends one provider's webhooks to one endpoint.
type Runner struct {
	// URL is the endpoint.
	URL string
	// Provider is the scheme's provider; Options its source's settings:
	// header settings (hmac, token), event_id and event_type (where the
	// endpoint reads the id a probe is asked about) and public_url (the
	// URL signed, for a scheme that signs it). Options.Secrets is unused:
	// Signer holds the secret.
	Provider provider.Provider
	Options  provider.Options
	Signer   *provider.Signer
	// Sample is the event sent; Template its body (Sample.Body(), or a
	// file of one's own with the same placeholders).
	Sample   provider.Sample
	Template []byte
	// Timeout is how long an answer is waited for: the provider's.
	Timeout time.Duration
	// N is how many copies dup-par sends at once.
	N int
	// Speed divides the provider's retry schedule for storm; zero
	// compresses it into StormBudget.
	Speed float64
	// Wait bounds how long Probe is watched for a scenario's effects.
	Wait time.Duration
	// Probe counts the endpoint's side effects; nil: they are not counted.
	Probe Prober
	// Progress, if set, is told what is being done, a line at a time.
	Progress func(string)
	// Now is the clock the requests are signed with (time.Now if nil).
	Now func() time.Time

	contentType string // of Template: Validate sets it
}

// Validate checks the Runner's settings: a URL of http or https, a signer,
// N from 2 to MaxN, a timeout and a wait within their limits, a speed that
// keeps the storm within MaxStorm, and a template whose event id is where
// the source's event_id finds it.
func (r *Runner) Validate() error {
	u, err := url.Parse(r.URL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("URL %q: want an absolute http or https URL", r.URL)
	case u.Fragment != "":
		return fmt.Errorf("URL %q: a fragment is never sent", r.URL)
	case r.Signer == nil:
		return errors.New("no signer")
	case r.N < 2 || r.N > MaxN:
		return fmt.Errorf("n %d: want 2 to %d", r.N, MaxN)
	case r.Timeout <= 0 || r.Timeout > MaxTimeout:
		return fmt.Errorf("timeout %s: want more than 0 and at most %s", r.Timeout, MaxTimeout)
	case r.Wait <= 0 || r.Wait > MaxWait:
		return fmt.Errorf("wait %s: want more than 0 and at most %s", r.Wait, MaxWait)
	case r.Speed < 0 || r.Speed > 0 && r.Speed < 1:
		return fmt.Errorf("speed %g: want 1 or more (0: fit the schedule into %s)", r.Speed, StormBudget)
	}
	if r.Speed > 0 {
		if d := time.Duration(float64(r.Provider.Retries.Total()) / r.Speed); d > MaxStorm {
			return fmt.Errorf("speed %g: %s's retry schedule of %s would take %s, over %s: give a speed of %.0f or more", r.Speed,
				r.Provider.Name, r.Provider.Retries.Total(), d.Round(time.Second), MaxStorm, float64(r.Provider.Retries.Total())/float64(MaxStorm))
		}
	}
	if _, err := r.idLocation(); err != nil {
		return err
	}
	r.contentType = contentType(r.Sample, r.Template)
	// One event built as the scenarios build them: its template fills, it
	// signs, and its id is where the endpoint reads it.
	e := r.newEvent(r.now())
	if _, err := r.request(e, 1, r.now()); err != nil {
		return err
	}
	return nil
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// idLocation is where the endpoint reads an event's id: the source's
// event_id, else the provider's.
func (r *Runner) idLocation() (location.Location, error) {
	spec := r.Options.EventID
	if spec == "" {
		spec = r.Provider.EventID
	}
	if spec == "" {
		return nil, fmt.Errorf("%s has no event id location: give the source's event_id", r.Provider.Name)
	}
	loc, err := location.Parse(spec, location.ID)
	if err != nil {
		return nil, fmt.Errorf("event_id %q: %w", spec, err)
	}
	return loc, nil
}

// Run runs the scenarios in order and returns their results. The error is
// ctx's, or a request that could not be built; what the endpoint did is
// in the results, never an error.
func (r *Runner) Run(ctx context.Context, scenarios []string) ([]Result, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	results := make([]Result, 0, len(scenarios))
	for _, name := range scenarios {
		start := time.Now()
		res, err := r.run(ctx, name)
		if err != nil {
			return results, fmt.Errorf("%s: %w", name, err)
		}
		res.Scenario = name
		res.Timeout = Millis(r.Timeout)
		res.Elapsed = Millis(time.Since(start))
		results = append(results, res)
		if err := ctx.Err(); err != nil {
			return results, err
		}
	}
	return results, nil
}

func (r *Runner) progress(format string, args ...any) {
	if r.Progress != nil {
		r.Progress(fmt.Sprintf(format, args...))
	}
}

// Result is what one scenario did.
type Result struct {
	Scenario string `json:"scenario"`
	Verdict  string `json:"result"`
	// Detail says why, for a verdict other than ok.
	Detail     string        `json:"detail,omitempty"`
	ResourceID string        `json:"resource_id"`
	Events     []EventResult `json:"events"`
	Answers    []Answer      `json:"answers"`
	// P99 is the 99th percentile of the answers' latencies (an answer
	// that did not come counting as the timeout), InTime whether every
	// answer came within the timeout.
	P99     Millis `json:"p99_ms"`
	Timeout Millis `json:"timeout_ms"`
	InTime  bool   `json:"acked_in_time"`
	// Version is the resource's version as the probe last reported it;
	// "" when it reports none.
	Version string `json:"version,omitempty"`
	Elapsed Millis `json:"elapsed_ms"`
}

// EventResult is one event of a scenario.
type EventResult struct {
	// ID is the event's id as the endpoint reads it; SentAs lists every id
	// it was sent under, where a provider sends a new one with each
	// attempt (Sentry).
	ID     string   `json:"event_id"`
	SentAs []string `json:"sent_as,omitempty"`
	// Version is the event's version, the time in Unix seconds.
	Version int64 `json:"version"`
	// Effects is how many times the handler's side effect of the event
	// ran, over every id it was sent under; nil when not counted.
	Effects *int `json:"effects,omitempty"`
}

// Answer is one request's outcome.
type Answer struct {
	Event   int    `json:"event"` // its index in Events
	Attempt int    `json:"attempt"`
	Status  int    `json:"status,omitempty"` // 0: none came
	Latency Millis `json:"latency_ms"`
	Error   string `json:"error,omitempty"`
	// TimedOut is set when no answer came within the timeout.
	TimedOut bool `json:"timed_out,omitempty"`
	// Dropped is set for a request whose answer was deliberately never
	// read (lost-response's first).
	Dropped bool `json:"dropped,omitempty"`
	// Due says a 2xx was due: the provider would count anything else as
	// a failure.
	Due bool `json:"due"`
}

// OK reports whether the answer was a 2xx.
func (a Answer) OK() bool { return a.Status >= 200 && a.Status < 300 }

// Millis is a duration that JSON writes in milliseconds.
type Millis time.Duration

// MarshalJSON writes m in milliseconds, to the tenth.
func (m Millis) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, "%.1f", float64(m)/float64(time.Millisecond)), nil
}

// UnmarshalJSON reads milliseconds, as MarshalJSON writes them.
func (m *Millis) UnmarshalJSON(b []byte) error {
	var ms float64
	if err := json.Unmarshal(b, &ms); err != nil {
		return err
	}
	*m = Millis(ms * float64(time.Millisecond))
	return nil
}

// D is m as a time.Duration.
func (m Millis) D() time.Duration { return time.Duration(m) }
