package queue_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/dedupe"
	"hookbox/queue"
	"hookbox/store"
)

// startAlertingPool starts a pool of one worker with a single target,
// maxAttempts attempts, retry waits of backoff and alerting on, stopped
// when the test ends. dead counts the deliveries it saw go dead.
func startAlertingPool(t *testing.T, q *queue.Queue, target string, maxAttempts int, backoff time.Duration, h queue.HandlerFunc) (dead *atomic.Int64) {
	t.Helper()
	dead = new(atomic.Int64)
	p := queue.NewPool(q, queue.PoolConfig{
		Workers: 1, MaxAttempts: maxAttempts, Lease: time.Minute, Grace: time.Second,
		Retry:    queue.Backoff{Base: backoff, Max: backoff},
		Targets:  []queue.Target{{Name: target, Handler: h}},
		Alerting: true,
		OnDead:   func() { dead.Add(1) },
		Logger:   zerolog.Nop(),
	})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return dead
}

// alertsDue counts the dead letters whose alert is due.
func alertsDue(t *testing.T, db *store.DB) int {
	t.Helper()
	var n int
	if err := db.Reader().QueryRow(`SELECT count(*) FROM dead_letters WHERE alert_due_at IS NOT NULL`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A failure that is (or wraps) a *PermanentError goes dead at its first
// attempt, with its alert and the reason, however many attempts are left;
// the attempt records the failure's own message.
func TestPool_PermanentFailureGoesDeadAtOnce(t *testing.T) {
	for name, fail := range map[string]error{
		"Permanent":         queue.Permanent("exit 65", errors.New("exit status 65 (permanent failure)")),
		"Wrapped permanent": fmt.Errorf("deliver: %w", queue.Permanent("exit 65", errors.New("exit status 65 (permanent failure)"))),
	} {
		t.Run(name, func(t *testing.T) {
			db, q, events := mustOpenDB(t, "sink")
			ev := mustIngest(t, events, "evt_perm", time.Now())
			var calls atomic.Int64
			dead := startAlertingPool(t, q, "sink", 5, time.Millisecond, func(context.Context, *queue.Job) queue.Outcome {
				calls.Add(1)
				return queue.Outcome{Err: fail}
			})
			waitStatus(t, q, ev, queue.Dead)
			d := mustDelivery(t, q, ev)
			if d.Attempts != 1 || d.DeadReason != "permanent: exit 65" {
				t.Errorf("dead after %d attempt(s), reason %q; want 1, %q", d.Attempts, d.DeadReason, "permanent: exit 65")
			}
			if want := fail.Error(); d.LastError != want {
				t.Errorf("last error %q, want %q", d.LastError, want)
			}
			attempts, err := q.Attempts(context.Background(), d.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(attempts) != 1 || attempts[0].Outcome != "failed" {
				t.Errorf("attempts %+v, want one failed", attempts)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("the target ran %d times, want once", n)
			}
			waitFor(t, "OnDead to run", func() bool { return dead.Load() > 0 }) // after the commit a reader may see first
			if n := dead.Load(); n != 1 {
				t.Errorf("OnDead ran %d times, want once", n)
			}
			if n := alertsDue(t, db); n != 1 {
				t.Errorf("%d alerts due, want 1", n)
			}
		})
	}
}

// Any other failure is retried until the attempt limit, and then goes dead
// with no reason of its own: it spent its attempts.
func TestPool_OtherFailureIsRetriedToTheLimit(t *testing.T) {
	db, q, events := mustOpenDB(t, "sink")
	ev := mustIngest(t, events, "evt_retry", time.Now())
	var calls atomic.Int64
	dead := startAlertingPool(t, q, "sink", 3, time.Millisecond, func(context.Context, *queue.Job) queue.Outcome {
		calls.Add(1)
		return queue.Outcome{Err: errors.New("exit status 75 (temporary failure)")}
	})
	waitStatus(t, q, ev, queue.Dead)
	if d := mustDelivery(t, q, ev); d.Attempts != 3 || d.DeadReason != "" {
		t.Errorf("dead after %d attempt(s), reason %q; want 3 and none", d.Attempts, d.DeadReason)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("the target ran %d times, want 3", n)
	}
	// OnDead runs once the result is committed, which a reader may see a
	// moment before.
	waitFor(t, "OnDead to run", func() bool { return dead.Load() > 0 })
	if n, m := dead.Load(), alertsDue(t, db); n != 1 || m != 1 {
		t.Errorf("OnDead ran %d times and %d alerts are due, want one each", n, m)
	}
}

// A dead delivery queued again (replayed, or redelivered by its sender)
// loses its dead reason: it has not gone dead again.
func TestQueue_ReplayClearsDeadReason(t *testing.T) {
	for _, again := range []string{"Replay", "Redelivery"} {
		t.Run(again, func(t *testing.T) {
			_, q, events := mustOpenDB(t, "sink")
			events.OnDuplicate = func(tx *sql.Tx, id int64, now time.Time) (int64, error) {
				return q.ReviveTx(context.Background(), tx, id, now)
			}
			ctx := context.Background()
			now := time.Now()
			ev := mustIngest(t, events, "evt_perm", now.Add(-time.Minute))
			jobs, err := q.Claim(ctx, 1, time.Minute, now)
			if err != nil || len(jobs) != 1 {
				t.Fatalf("claim: %d jobs, %v", len(jobs), err)
			}
			f := queue.Finish{Attempt: queue.Attempt{Number: 1, StartedAt: now, Outcome: "failed", Error: "status 410"}, Dead: true, Reason: "permanent: status 410"}
			if err := q.Complete(ctx, jobs[0], f, now); err != nil {
				t.Fatal(err)
			}
			if d := mustDelivery(t, q, ev); d.DeadReason != "permanent: status 410" {
				t.Fatalf("dead reason %q, want %q", d.DeadReason, "permanent: status 410")
			}
			if again == "Replay" {
				if r, err := q.Replay(ctx, queue.ReplaySelector{DeadOnly: true}, now); err != nil || r.Queued != 1 {
					t.Fatalf("replay: %+v, %v", r, err)
				}
			} else {
				res, err := events.Ingest(ctx, &dedupe.Event{Source: "shop", EventID: "evt_perm", Type: "order.created", ReceivedAt: now, Body: []byte(`{}`)})
				if err != nil || res.Revived != 1 {
					t.Fatalf("redelivery: revived %d, %v; want the dead delivery revived", res.Revived, err)
				}
			}
			if d := mustDelivery(t, q, ev); d.Status != queue.Pending || d.DeadReason != "" {
				t.Errorf("after a %s: %s, reason %q; want pending with none", again, d.Status, d.DeadReason)
			}
		})
	}
}
