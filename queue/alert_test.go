package queue_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/dedupe"
	"hookbox/queue"
)

// notifier counts alerts; block, if set, holds each send until it yields
// the send's answer.
type notifier struct {
	sent  atomic.Int64
	block chan error
}

func (n *notifier) Notify(context.Context, queue.Alert) error {
	n.sent.Add(1)
	if n.block != nil {
		return <-n.block
	}
	return nil
}

// deadWithAlert stores one event whose delivery went dead with its alert due.
func deadWithAlert(t *testing.T) *store {
	t.Helper()
	q := MustOpen(t, "sink")
	ctx := context.Background()
	now := time.Now()
	mustIngest(t, q, "evt_dead", now.Add(-time.Minute))
	jobs, err := q.Claim(ctx, 1, time.Minute, now, nil)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	f := queue.Finish{Attempt: queue.Attempt{Number: 1, StartedAt: now, Outcome: "failed", Error: "boom"}, Dead: true, AlertDue: true}
	if err := q.Complete(ctx, jobs[0], f, now); err != nil {
		t.Fatal(err)
	}
	return q
}

// deadLetter returns the store's one dead letter.
func deadLetter(t *testing.T, q *store) queue.DeadLetter {
	t.Helper()
	all, err := q.DeadLetters(context.Background(), true, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 {
		t.Fatalf("%d dead letters, want 1", len(all))
	}
	return all[0]
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// An alert whose outcome the store refuses (a full disk) is not sent again
// and again: the alerter writes the outcome again until it goes in.
func TestAlerter_UnrecordedOutcomeIsNotResent(t *testing.T) {
	q := deadWithAlert(t)
	exec(t, q, `CREATE TRIGGER refuse BEFORE UPDATE ON dead_letters BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`)
	n := &notifier{}
	a := queue.NewAlerter(q, n, zerolog.Nop(), nil)
	a.Start(context.Background())
	defer a.Stop()
	waitFor(t, "the alert is sent", func() bool { return n.sent.Load() > 0 })
	time.Sleep(300 * time.Millisecond) // the store still refuses
	exec(t, q, `DROP TRIGGER refuse`)
	waitFor(t, "the outcome is recorded", func() bool { return !deadLetter(t, q).AlertedAt.IsZero() })
	a.Stop()
	if got := n.sent.Load(); got != 1 {
		t.Errorf("the alert was sent %d times while its outcome could not be written, want once", got)
	}
}

// A dead letter revived (the sender sent the event again) while its alert
// was on its way does not get the alert back when that send fails.
func TestAlerter_RevivedDuringSendIsNotAlertedAgain(t *testing.T) {
	q := deadWithAlert(t)
	n := &notifier{block: make(chan error)}
	a := queue.NewAlerter(q, n, zerolog.Nop(), nil)
	a.Backoff.Base = time.Millisecond
	a.Start(context.Background())
	defer a.Stop()
	waitFor(t, "the alert is on its way", func() bool { return n.sent.Load() > 0 })
	res, err := q.IngestEvent(context.Background(), &dedupe.Event{Source: "shop", EventID: "evt_dead", Type: "order.created", ReceivedAt: time.Now(), Body: []byte(`{}`)}, q.targets)
	if err != nil || res.Revived != 1 {
		t.Fatalf("redelivery: revived %d, %v; want the dead delivery revived", res.Revived, err)
	}
	n.block <- errors.New("alert endpoint down")
	waitFor(t, "the failed send is recorded", func() bool { return deadLetter(t, q).AlertTries == 1 })
	if due := deadLetter(t, q).AlertDueAt; !due.IsZero() {
		t.Errorf("the revived dead letter's alert is due again at %v, want no alert", due)
	}
	close(n.block) // a further send (there should be none) returns at once
	a.Stop()
	if got := n.sent.Load(); got != 1 {
		t.Errorf("%d alerts sent for a dead letter revived during the first, want 1", got)
	}
}

// The alerter puts no time limit of its own on a send: the [alert] timeout
// (which the notifier applies) may be longer than any default would be.
func TestAlerter_SendHasNoDeadlineOfItsOwn(t *testing.T) {
	q := deadWithAlert(t)
	deadline := make(chan bool, 1)
	n := notifierFunc(func(ctx context.Context, _ queue.Alert) error {
		_, has := ctx.Deadline()
		select {
		case deadline <- has:
		default:
		}
		return nil
	})
	a := queue.NewAlerter(q, n, zerolog.Nop(), nil)
	a.Start(context.Background())
	defer a.Stop()
	select {
	case has := <-deadline:
		if has {
			t.Error("the alert was sent under a deadline the alerter set; the [alert] timeout alone should bound it")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no alert sent")
	}
}

type notifierFunc func(context.Context, queue.Alert) error

func (f notifierFunc) Notify(ctx context.Context, a queue.Alert) error { return f(ctx, a) }
