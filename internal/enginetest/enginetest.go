// Package enginetest is the conformance suite of hookbox's store engines:
// the behaviours every engine must have, whatever its database, run as
// subtests against an engine a test opens (goqite's internal/testing). An
// engine's own tests call Run with a function that opens a fresh, empty
// store; what only one engine does (its writer, its query plans, its
// migrations) is tested beside it.
package enginetest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"hookbox/dedupe"
	"hookbox/health"
	"hookbox/inbox"
	"hookbox/metrics"
	"hookbox/order"
	"hookbox/queue"
	"hookbox/view"
)

// Engine is everything a store engine offers: the interfaces the logic
// packages declare, and what the commands call.
type Engine interface {
	inbox.Store      // IngestEvent
	queue.Store      // the pool's claims, renewals, completions
	queue.AlertStore // the alerter's due alerts and outcomes
	dedupe.Store     // the sweeper's Sweep
	view.Store       // GetEvent, Deliveries, Attempts
	metrics.Queue    // QueueByTarget
	health.Store     // the health monitor's figures, alarms and notices
	QueueStats(ctx context.Context) (queue.Stats, error)
	Waiting(ctx context.Context) (int64, error)
	IngestEvents(ctx context.Context, evs []*dedupe.Event, targets []string) ([]dedupe.Result, error)
	ListEvents(ctx context.Context, f dedupe.Filter) ([]dedupe.Stored, error)
	DeadLetters(ctx context.Context, all bool, limit int) ([]queue.DeadLetter, error)
	QueuedByTarget(ctx context.Context) (map[string]int64, error)
	Running(ctx context.Context) ([]queue.RunningKey, error)
	Replay(ctx context.Context, sel queue.ReplaySelector, now time.Time) (queue.Replayed, error)
	Backfill(ctx context.Context, sel queue.BackfillSelector, now time.Time) (queue.Backfilled, error)
	AttemptSpan(ctx context.Context) (first, last time.Time, ok bool, err error)
	Pause(ctx context.Context, target string, now time.Time) (queue.PauseResult, error)
	Resume(ctx context.Context, target string, now time.Time) (queue.PauseResult, error)
	// Lanes (lanes.go)
	SetOrder(lanes map[string]order.Lane)
	ReleaseLanes(ctx context.Context, now time.Time) (int64, error)
	Lanes(ctx context.Context, f queue.LaneFilter) ([]queue.Lane, error)
	LanePosition(ctx context.Context, delivery int64) (int64, error)
	LaneStats(ctx context.Context) (queue.LaneStats, error)
}

// Run runs every behaviour as a subtest, each on a fresh store from open,
// which must close it when the test ends.
func Run(t *testing.T, open func(t *testing.T) Engine) {
	groups := []struct {
		name  string
		tests []test
	}{
		{"Ingest", ingestTests},
		{"Conflicts", conflictTests},
		{"List", listTests},
		{"Claim", claimTests},
		{"Backoff", backoffTests},
		{"Dead", deadTests},
		{"Replay", replayTests},
		{"Backfill", backfillTests},
		{"Retention", retentionTests},
		{"Alerts", alertTests},
		{"Recovery", recoveryTests},
		{"Replicas", replicaTests},
		{"Read", readTests},
		{"Pause", pauseTests},
		{"Pool", poolTests},
		{"Health", healthTests},
		{"Lanes", laneTests},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, c := range g.tests {
				t.Run(c.name, func(t *testing.T) { c.fn(t, open(t)) })
			}
		})
	}
}

type test struct {
	name string
	fn   func(t *testing.T, e Engine)
}

// t0 is the suite's clock: a whole millisecond, as engines keep times.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// event is a new Stripe event with id, received at t0.
func event(id string) *dedupe.Event {
	return &dedupe.Event{
		Source:      "stripe",
		EventID:     id,
		Type:        "invoice.paid",
		ReceivedAt:  t0,
		ContentType: "application/json",
		Headers:     http.Header{"Stripe-Signature": {"t=1,v1=00"}},
		Body:        []byte(`{"id":"` + id + `"}`),
	}
}

// ingest stores a new event received at at, queued for targets, and
// returns its row id.
func ingest(tb testing.TB, e Engine, id string, at time.Time, targets ...string) int64 {
	tb.Helper()
	ev := event(id)
	ev.ReceivedAt = at
	res, err := e.IngestEvent(context.Background(), ev, targets)
	if err != nil {
		tb.Fatal(err)
	}
	if res.Duplicate {
		tb.Fatalf("event %s: duplicate, want new", id)
	}
	return res.ID
}

func mustList(tb testing.TB, e Engine, f dedupe.Filter) []dedupe.Stored {
	tb.Helper()
	list, err := e.ListEvents(context.Background(), f)
	if err != nil {
		tb.Fatal(err)
	}
	return list
}

// deliveries returns the deliveries of event.
func deliveries(tb testing.TB, e Engine, event int64) []queue.Delivery {
	tb.Helper()
	m, err := e.Deliveries(context.Background(), []int64{event})
	if err != nil {
		tb.Fatal(err)
	}
	return m[event]
}

// delivery returns event's one delivery.
func delivery(tb testing.TB, e Engine, event int64) queue.Delivery {
	tb.Helper()
	ds := deliveries(tb, e, event)
	if len(ds) != 1 {
		tb.Fatalf("event %d has %d deliveries, want 1", event, len(ds))
	}
	return ds[0]
}

// claim claims up to n deliveries due at now under a minute's lease.
func claim(tb testing.TB, e Engine, n int, now time.Time) []*queue.Job {
	tb.Helper()
	jobs, err := e.Claim(context.Background(), n, time.Minute, now, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return jobs
}

// claimOne claims the one delivery due at now.
func claimOne(tb testing.TB, e Engine, now time.Time) *queue.Job {
	tb.Helper()
	jobs := claim(tb, e, 10, now)
	if len(jobs) != 1 {
		tb.Fatalf("claimed %d jobs at %v, want 1", len(jobs), now)
	}
	return jobs[0]
}

func complete(tb testing.TB, e Engine, j *queue.Job, f queue.Finish, now time.Time) {
	tb.Helper()
	if err := e.Complete(context.Background(), j, f, now); err != nil {
		tb.Fatalf("complete delivery %d: %v", j.Delivery, err)
	}
}

// The finishes of an attempt of j started at at.
func finishOK(j *queue.Job, at time.Time) queue.Finish {
	return queue.Finish{Attempt: queue.Attempt{Number: j.Attempt, StartedAt: at, Outcome: "ok"}}
}

func finishFailed(j *queue.Job, at, next time.Time, msg string) queue.Finish {
	return queue.Finish{Attempt: queue.Attempt{Number: j.Attempt, StartedAt: at, Outcome: "failed", Error: msg}, Next: next}
}

func finishDead(j *queue.Job, at time.Time, msg, reason string, alert bool) queue.Finish {
	return queue.Finish{Attempt: queue.Attempt{Number: j.Attempt, StartedAt: at, Outcome: "failed", Error: msg},
		Dead: true, Reason: reason, AlertDue: alert}
}
