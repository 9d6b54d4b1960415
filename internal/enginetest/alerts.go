package enginetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"hookbox/queue"
)

var alertTests = []test{
	{"Due and recorded", testAlertsDueAndRecorded},
	{"Revived during a send", testAlertRevivedDuringSend},
}

// deadLetter stores an event whose delivery to sink goes dead at at, its
// alert due if alert.
func deadLetter(t *testing.T, e Engine, id string, at time.Time, alert bool) int64 {
	t.Helper()
	ev := ingest(t, e, id, t0, "sink")
	j := claimOne(t, e, at)
	complete(t, e, j, finishDead(j, at, "status 500", "", alert), at)
	return ev
}

// letter returns the dead letter of event.
func letter(t *testing.T, e Engine, event int64) queue.DeadLetter {
	t.Helper()
	all, err := e.DeadLetters(context.Background(), true, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range all {
		if l.Event == event {
			return l
		}
	}
	t.Fatalf("no dead letter of event %d in %+v", event, all)
	return queue.DeadLetter{}
}

// dueAt lists the events of the alerts due at now.
func dueAt(t *testing.T, e Engine, now time.Time, limit int) []queue.DueAlert {
	t.Helper()
	due, err := e.DueAlerts(context.Background(), now, limit)
	if err != nil {
		t.Fatal(err)
	}
	return due
}

func events(due []queue.DueAlert) (out []int64) {
	for _, d := range due {
		out = append(out, d.Event)
	}
	return out
}

// A dead letter's alert is due from when it went dead, longest due first;
// each send's outcome is recorded: sent, retried later, or given up. A dead
// letter without an alert is never due.
func testAlertsDueAndRecorded(t *testing.T, e Engine) {
	ctx := context.Background()
	a := deadLetter(t, e, "evt_a", t0, true)
	b := deadLetter(t, e, "evt_b", t0.Add(time.Second), true)
	c := deadLetter(t, e, "evt_c", t0, false)

	if due := dueAt(t, e, t0.Add(-time.Millisecond), 10); len(due) != 0 {
		t.Fatalf("due before any went dead: %v", events(due))
	}
	due := dueAt(t, e, t0.Add(time.Second), 10)
	if got := events(due); len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("due alerts: events %v, want %d then %d", got, a, b)
	}
	d := due[0]
	if d.Letter != letter(t, e, a).ID || d.Tries != 0 || d.Source != "stripe" || d.EventID != "evt_a" || d.Type != "invoice.paid" ||
		d.Target != "sink" || d.Attempts != 1 || d.Error != "status 500" || !d.DeadAt.Equal(t0) {
		t.Errorf("due alert %+v, want evt_a's dead letter, untried", d)
	}
	if got := events(dueAt(t, e, t0.Add(time.Second), 1)); len(got) != 1 || got[0] != a {
		t.Errorf("one due alert: events %v, want %d", got, a)
	}

	down := errors.New("alert endpoint down")
	if err := e.RecordAlert(ctx, queue.AlertOutcome{Letter: d.Letter, Err: down, Next: t0.Add(5 * time.Second), At: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if got := events(dueAt(t, e, t0.Add(2*time.Second), 10)); len(got) != 1 || got[0] != b {
		t.Errorf("due after a failed send: events %v, want %d only", got, b)
	}
	if l := letter(t, e, a); l.AlertTries != 1 || l.AlertErr != down.Error() || !l.AlertDueAt.Equal(t0.Add(5*time.Second)) || !l.AlertedAt.IsZero() {
		t.Errorf("after a failed send: %+v, want 1 try, its error, due again at %v", l, t0.Add(5*time.Second))
	}
	due = dueAt(t, e, t0.Add(5*time.Second), 10)
	if got := events(due); len(got) != 2 || got[0] != b || got[1] != a || due[1].Tries != 1 {
		t.Fatalf("due at the retry: %+v, want %d then %d (tried once)", due, b, a)
	}

	sent := t0.Add(5 * time.Second)
	if err := e.RecordAlert(ctx, queue.AlertOutcome{Letter: due[1].Letter, At: sent}); err != nil {
		t.Fatal(err)
	}
	if l := letter(t, e, a); l.AlertTries != 2 || l.AlertErr != "" || !l.AlertDueAt.IsZero() || !l.AlertedAt.Equal(sent) {
		t.Errorf("after a sent alert: %+v, want 2 tries, no error, not due, sent at %v", l, sent)
	}
	if err := e.RecordAlert(ctx, queue.AlertOutcome{Letter: due[0].Letter, Err: down, GaveUp: true, At: sent}); err != nil {
		t.Fatal(err)
	}
	if l := letter(t, e, b); l.AlertTries != 1 || l.AlertErr != down.Error() || !l.AlertDueAt.IsZero() || !l.AlertedAt.IsZero() {
		t.Errorf("after giving up: %+v, want 1 try, its error, not due, never sent", l)
	}
	if l := letter(t, e, c); l.AlertTries != 0 || !l.AlertDueAt.IsZero() {
		t.Errorf("dead letter without an alert: %+v, want none due", l)
	}
	if due := dueAt(t, e, t0.Add(time.Hour), 10); len(due) != 0 {
		t.Errorf("due at the end: %v, want none", events(due))
	}
}

// A dead letter revived (the sender sent the event again) while its alert
// was on its way does not get the alert back when that send fails.
func testAlertRevivedDuringSend(t *testing.T, e Engine) {
	ctx := context.Background()
	ev := deadLetter(t, e, "evt_dead", t0, true)
	due := dueAt(t, e, t0, 10)
	if len(due) != 1 {
		t.Fatalf("%d alerts due, want 1", len(due))
	}
	again := event("evt_dead")
	again.ReceivedAt = t0.Add(time.Second)
	if res, err := e.IngestEvent(ctx, again, nil); err != nil || res.Revived != 1 {
		t.Fatalf("redelivery: revived %d, %v; want the dead delivery revived", res.Revived, err)
	}
	if err := e.RecordAlert(ctx, queue.AlertOutcome{Letter: due[0].Letter, Err: errors.New("alert endpoint down"),
		Next: t0.Add(5 * time.Second), At: t0.Add(2 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	if l := letter(t, e, ev); l.AlertTries != 1 || !l.AlertDueAt.IsZero() {
		t.Errorf("the revived dead letter: %+v, want 1 try and no alert due", l)
	}
	if due := dueAt(t, e, t0.Add(time.Hour), 10); len(due) != 0 {
		t.Errorf("due alerts: %v, want none", events(due))
	}
}
