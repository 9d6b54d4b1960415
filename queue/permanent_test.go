package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/queue"
)

// startAlertingPool starts a pool of one worker with a single target,
// maxAttempts attempts, retry waits of backoff and alerting on, stopped
// when the test ends. dead counts the deliveries it saw go dead.
func startAlertingPool(t *testing.T, q *store, target string, maxAttempts int, backoff time.Duration, h queue.HandlerFunc) (dead *atomic.Int64) {
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
func alertsDue(t *testing.T, q *store) int {
	t.Helper()
	all, err := q.DeadLetters(context.Background(), true, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range all {
		if !l.AlertDueAt.IsZero() {
			n++
		}
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
			q := MustOpen(t, "sink")
			ev := mustIngest(t, q, "evt_perm", time.Now())
			var calls atomic.Int64
			dead := startAlertingPool(t, q, "sink", 5, time.Millisecond, func(context.Context, *queue.Job) queue.Outcome {
				calls.Add(1)
				return queue.Outcome{Err: fail}
			})
			waitStatus(t, q, ev, queue.Dead)
			// OnDead runs once the write is durable, a moment after a
			// reader can see it.
			waitFor(t, "OnDead to run", func() bool { return dead.Load() > 0 })
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
			if n := dead.Load(); n != 1 {
				t.Errorf("OnDead ran %d times, want once", n)
			}
			if n := alertsDue(t, q); n != 1 {
				t.Errorf("%d alerts due, want 1", n)
			}
		})
	}
}

// Any other failure is retried until the attempt limit, and then goes dead
// with no reason of its own: it spent its attempts.
func TestPool_OtherFailureIsRetriedToTheLimit(t *testing.T) {
	q := MustOpen(t, "sink")
	ev := mustIngest(t, q, "evt_retry", time.Now())
	var calls atomic.Int64
	dead := startAlertingPool(t, q, "sink", 3, time.Millisecond, func(context.Context, *queue.Job) queue.Outcome {
		calls.Add(1)
		return queue.Outcome{Err: errors.New("exit status 75 (temporary failure)")}
	})
	waitStatus(t, q, ev, queue.Dead)
	waitFor(t, "OnDead to run", func() bool { return dead.Load() > 0 })
	if d := mustDelivery(t, q, ev); d.Attempts != 3 || d.DeadReason != "" {
		t.Errorf("dead after %d attempt(s), reason %q; want 3 and none", d.Attempts, d.DeadReason)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("the target ran %d times, want 3", n)
	}
	if n, m := dead.Load(), alertsDue(t, q); n != 1 || m != 1 {
		t.Errorf("OnDead ran %d times and %d alerts are due, want one each", n, m)
	}
}
