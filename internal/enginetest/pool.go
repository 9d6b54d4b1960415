package enginetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/queue"
)

var poolTests = []test{
	{"Pause holds a day, resume drains", testPoolPauseHoldsADay},
	{"Pause lets the running attempt finish, holds the claimed", testPoolPauseHoldsClaimed},
}

// clock is a test clock the pool reads.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// waitUntil polls cond until it holds or d passes.
func waitUntil(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A target paused for a day of the pool's clock, past every retry its
// deliveries had left, spends no attempt and loses none to dead; new
// events queue for it paused while the other target goes on; resumed, it
// drains. Without the pause, three attempts a minute or two apart would
// have put each of them dead in the first minutes.
func testPoolPauseHoldsADay(t *testing.T, e Engine) {
	ctx := context.Background()
	clk := &clock{now: t0}
	var down atomic.Bool
	down.Store(true)
	var billingCalls, mailCalls atomic.Int64
	pool := queue.NewPool(e, queue.PoolConfig{
		Workers:     2,
		MaxAttempts: 3,
		Lease:       5 * time.Minute,
		Grace:       time.Second,
		Retry:       queue.Backoff{Base: time.Minute, Max: 10 * time.Minute},
		Targets: []queue.Target{
			{Name: "billing", Handler: queue.HandlerFunc(func(context.Context, *queue.Job) queue.Outcome {
				billingCalls.Add(1)
				if down.Load() {
					return queue.Outcome{Err: errors.New("status 503")}
				}
				return queue.Outcome{}
			})},
			{Name: "mail", Handler: queue.HandlerFunc(func(context.Context, *queue.Job) queue.Outcome {
				mailCalls.Add(1)
				return queue.Outcome{}
			})},
		},
		PausedEvery: 10 * time.Millisecond,
		Now:         clk.Now,
		Logger:      zerolog.Nop(),
	})
	if err := pool.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer pool.Stop()
	const n = 5
	var evs []int64
	for i := range n {
		evs = append(evs, ingest(t, e, "evt_"+string(rune('a'+i)), t0, "billing", "mail"))
	}
	pool.Notify()
	// Each first attempt at billing fails: they wait for their retry.
	waitUntil(t, 10*time.Second, "every first attempt", func() bool { return billingCalls.Load() == n && mailCalls.Load() == n })
	waitUntil(t, 10*time.Second, "the failures recorded", func() bool {
		for _, ev := range evs {
			if statusOf(t, e, ev, "billing").Status != queue.Retrying {
				return false
			}
		}
		return true
	})
	mustPause(t, e, "billing", clk.Now())

	// A day, ten minutes at a time: every retry would long be due.
	for range 24 * 6 {
		clk.Add(10 * time.Minute)
		pool.Notify()
		time.Sleep(2 * time.Millisecond)
	}
	late := ingest(t, e, "late", clk.Now(), "billing", "mail")
	pool.Notify()
	waitUntil(t, 10*time.Second, "the late event delivered to mail", func() bool { return mailCalls.Load() == n+1 })
	time.Sleep(50 * time.Millisecond) // room for a wrong attempt to show
	if got := billingCalls.Load(); got != n {
		t.Fatalf("billing was called %d times while paused for a day, want %d (the attempts before the pause)", got, n)
	}
	for _, ev := range append(evs, late) {
		d := statusOf(t, e, ev, "billing")
		want := 1
		if ev == late {
			want = 0
		}
		if d.Status != queue.Paused || d.Attempts != want {
			t.Errorf("event %d after a paused day: %s after %d attempts, want paused after %d", ev, d.Status, d.Attempts, want)
		}
	}
	if letters, err := e.DeadLetters(ctx, false, 0); err != nil || len(letters) != 0 {
		t.Errorf("dead letters after a paused day: %d (%v), want none", len(letters), err)
	}

	down.Store(false)
	mustResume(t, e, "billing", clk.Now())
	pool.Notify()
	waitUntil(t, 10*time.Second, "the paused deliveries delivered after the resume", func() bool {
		for _, ev := range append(evs, late) {
			if statusOf(t, e, ev, "billing").Status != queue.Done {
				return false
			}
		}
		return true
	})
	if got := billingCalls.Load(); got != 2*n+1 {
		t.Errorf("billing calls %d, want %d: each held delivery once more after the resume", got, 2*n+1)
	}
	if d := statusOf(t, e, evs[0], "billing"); d.Attempts != 2 {
		t.Errorf("a held delivery took %d attempts, want 2 (one before the pause, one after)", d.Attempts)
	}
}

// A pause that lands while an attempt runs lets it finish; the jobs the
// pool had claimed ahead for the target, waiting for a worker, go back to
// the queue paused, their claim not counted, instead of starting.
func testPoolPauseHoldsClaimed(t *testing.T, e Engine) {
	ctx := context.Background()
	started := make(chan struct{}, 10)
	release := make(chan struct{})
	var calls atomic.Int64
	pool := queue.NewPool(e, queue.PoolConfig{
		Workers: 1, MaxAttempts: 3, Lease: time.Minute, Grace: time.Second,
		Retry: queue.Backoff{Base: time.Minute},
		Targets: []queue.Target{{Name: "billing", Handler: queue.HandlerFunc(func(context.Context, *queue.Job) queue.Outcome {
			calls.Add(1)
			started <- struct{}{}
			<-release
			return queue.Outcome{}
		})}},
		PausedEvery: 10 * time.Millisecond,
		Logger:      zerolog.Nop(),
	})
	var evs []int64
	for _, id := range []string{"a", "b", "c"} {
		evs = append(evs, ingest(t, e, id, time.Now().Add(-time.Minute), "billing"))
	}
	if err := pool.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer pool.Stop()
	<-started // one attempt runs; the other two wait, claimed, for the one worker
	mustPause(t, e, "billing", time.Now())
	time.Sleep(100 * time.Millisecond) // ten reads of the paused targets
	close(release)
	waitUntil(t, 10*time.Second, "the running attempt recorded, the claimed jobs back in the queue", func() bool {
		for _, ev := range evs {
			if st := statusOf(t, e, ev, "billing").Status; st != queue.Paused && st != queue.Done {
				return false
			}
		}
		return true
	})
	if got := calls.Load(); got != 1 {
		t.Errorf("%d attempts, want 1: the one running when the pause landed", got)
	}
	done := 0
	for _, ev := range evs {
		d := statusOf(t, e, ev, "billing")
		switch d.Status {
		case queue.Done:
			done++
		case queue.Paused:
			if d.Attempts != 0 {
				t.Errorf("held delivery spent %d attempts, want 0", d.Attempts)
			}
		}
	}
	if done != 1 {
		t.Errorf("%d done, want the 1 that was running", done)
	}
}
