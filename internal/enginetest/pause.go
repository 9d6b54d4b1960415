package enginetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"hookbox/dedupe"
	"hookbox/queue"
)

var pauseTests = []test{
	{"Holds queued deliveries", testPauseHoldsQueued},
	{"Resume releases", testResumeReleases},
	{"Resume one of two", testResumeOneOfTwo},
	{"Every way into the queue stays paused", testPausedStaysPaused},
	{"Defer", testDefer},
	{"Paused payloads are kept", testPausedNotSwept},
}

func mustPause(tb testing.TB, e Engine, target string, now time.Time) queue.PauseResult {
	tb.Helper()
	r, err := e.Pause(context.Background(), target, now)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

func mustResume(tb testing.TB, e Engine, target string, now time.Time) queue.PauseResult {
	tb.Helper()
	r, err := e.Resume(context.Background(), target, now)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// statusOf is the status and attempts of event's delivery to target.
func statusOf(tb testing.TB, e Engine, event int64, target string) queue.Delivery {
	tb.Helper()
	for _, d := range deliveries(tb, e, event) {
		if d.Target == target {
			return d
		}
	}
	tb.Fatalf("event %d has no delivery to %s", event, target)
	return queue.Delivery{}
}

// Pause holds a target's pending and retrying deliveries as paused, leaves
// the running one to finish (its retry then waits paused), and holds new
// events for it; no claim takes them, whatever the time. Other targets go
// on. The counts keep the paused ones (the admission budget counts them).
func testPauseHoldsQueued(t *testing.T, e Engine) {
	ctx := context.Background()
	pending := ingest(t, e, "pending", t0, "billing", "mail")
	retrying := ingest(t, e, "retrying", t0.Add(time.Second), "billing")
	running := ingest(t, e, "running", t0.Add(2*time.Second), "billing")
	// The retrying one fails once; the running one is claimed and runs.
	var run *queue.Job
	for _, j := range claim(t, e, 10, t0.Add(3*time.Second)) {
		switch {
		case j.Event == retrying:
			complete(t, e, j, finishFailed(j, t0, t0.Add(time.Minute), "status 503"), t0.Add(3*time.Second))
		case j.Event == running:
			run = j
		default:
			if err := e.Unclaim(ctx, []*queue.Job{j}, t0); err != nil {
				t.Fatal(err)
			}
		}
	}
	if run == nil {
		t.Fatal("the running delivery was not claimed")
	}

	pausedAt := t0.Add(time.Hour)
	r := mustPause(t, e, "billing", pausedAt)
	if r.Already || !r.Since.Equal(pausedAt) || r.Deliveries != 2 || r.Running != 1 {
		t.Fatalf("pause: %+v, want new, since %v, 2 held, 1 running", r, pausedAt)
	}
	for _, c := range []struct {
		event    int64
		status   string
		attempts int
	}{{pending, queue.Paused, 0}, {retrying, queue.Paused, 1}, {running, queue.Running, 1}} {
		if d := statusOf(t, e, c.event, "billing"); d.Status != c.status || d.Attempts != c.attempts {
			t.Errorf("event %d: %s after %d attempts, want %s after %d", c.event, d.Status, d.Attempts, c.status, c.attempts)
		}
	}
	if d := statusOf(t, e, pending, "mail"); d.Status != queue.Pending {
		t.Errorf("the other target's delivery: %s, want pending", d.Status)
	}
	// The running attempt finishes and fails: its retry waits paused.
	complete(t, e, run, finishFailed(run, pausedAt, pausedAt.Add(time.Second), "timeout"), pausedAt.Add(time.Second))
	if d := statusOf(t, e, running, "billing"); d.Status != queue.Paused || d.Attempts != 1 {
		t.Errorf("attempt finished after the pause: %s after %d attempts, want paused after 1", d.Status, d.Attempts)
	}
	late := ingest(t, e, "late", pausedAt.Add(time.Minute), "billing")
	if d := statusOf(t, e, late, "billing"); d.Status != queue.Paused || d.Attempts != 0 {
		t.Errorf("event received while paused: %s, want paused", d.Status)
	}

	dayLater := pausedAt.Add(24 * time.Hour)
	jobs := claim(t, e, 10, dayLater)
	if len(jobs) != 1 || jobs[0].Target != "mail" {
		t.Fatalf("claimed %d jobs a day later (%v), want only mail's", len(jobs), jobs)
	}
	complete(t, e, jobs[0], finishOK(jobs[0], dayLater), dayLater)
	if at, ok, err := e.NextDue(ctx, nil); err != nil || ok {
		t.Errorf("next due %v %v %v, want none: paused deliveries are not due", at, ok, err)
	}

	st, err := e.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.ByStatus[queue.Paused] != 4 || st.ByStatus[queue.Pending] != 0 || !st.OldestQueued.Equal(t0) {
		t.Errorf("queue stats %+v, want 4 paused, the oldest created at %v", st, t0)
	}
	byTarget, err := e.QueuedByTarget(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(byTarget) != "map[billing:4]" {
		t.Errorf("queued by target %v, want billing:4 (paused ones count)", byTarget)
	}
	// The metrics and the admission budget count them too.
	if n, err := e.Waiting(ctx); err != nil || n != 4 {
		t.Errorf("waiting %d (%v), want 4: paused deliveries count against max_queued", n, err)
	}
	tq, err := e.QueueByTarget(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b := tq["billing"]; b == nil || b.ByStatus[queue.Paused] != 4 || !b.OldestQueued.Equal(t0) {
		t.Errorf("metrics' queue of billing %+v, want 4 paused, the oldest created at %v", b, t0)
	}
	var listed []string
	for _, ev := range mustList(t, e, dedupe.Filter{Status: queue.Paused}) {
		listed = append(listed, ev.EventID)
	}
	slices.Sort(listed)
	if fmt.Sprint(listed) != "[late pending retrying running]" {
		t.Errorf("events with a paused delivery: %v, want late, pending, retrying, running", listed)
	}
	list, err := e.Paused(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "billing" || !list[0].Since.Equal(pausedAt) {
		t.Errorf("paused targets %+v, want billing since %v", list, pausedAt)
	}
	// Pausing again changes nothing and says since when.
	if r := mustPause(t, e, "billing", dayLater); !r.Already || !r.Since.Equal(pausedAt) || r.Deliveries != 4 || r.Running != 0 {
		t.Errorf("second pause: %+v, want already, since %v, 4 held", r, pausedAt)
	}
}

// Resume puts each paused delivery back, due at once (or when it was due,
// if earlier), with the attempts it had: a paused day spent none of them.
func testResumeReleases(t *testing.T, e Engine) {
	ctx := context.Background()
	fresh := ingest(t, e, "fresh", t0, "billing")
	notRun := ingest(t, e, "not_run", t0.Add(time.Second), "billing")
	// fresh fails once, due again in an hour; failed has not run yet.
	j := claimOne(t, e, t0)
	complete(t, e, j, finishFailed(j, t0, t0.Add(time.Hour), "status 500"), t0.Add(time.Second))
	mustPause(t, e, "billing", t0.Add(time.Minute))
	if r := mustResume(t, e, "mail", t0.Add(time.Minute)); !r.Already || r.Deliveries != 0 {
		t.Errorf("resume of a target not paused: %+v, want already, none released", r)
	}

	resumed := t0.Add(25 * time.Hour)
	r := mustResume(t, e, "billing", resumed)
	if r.Already || r.Deliveries != 2 || !r.Since.Equal(t0.Add(time.Minute)) {
		t.Fatalf("resume: %+v, want 2 released, paused since %v", r, t0.Add(time.Minute))
	}
	d := statusOf(t, e, fresh, "billing")
	if d.Status != queue.Retrying || d.Attempts != 1 || !d.RunAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("the retried one: %+v, want retrying after 1 attempt, due when it was (%v)", d, t0.Add(time.Hour))
	}
	d = statusOf(t, e, notRun, "billing")
	if d.Status != queue.Pending || d.Attempts != 0 || d.RunAt.After(resumed) {
		t.Errorf("the pending one: %+v, want pending, due by %v", d, resumed)
	}
	if list, err := e.Paused(ctx); err != nil || len(list) != 0 {
		t.Errorf("paused targets after resume: %v %v, want none", list, err)
	}
	jobs := claim(t, e, 10, resumed)
	attempts := map[int64]int{}
	for _, j := range jobs {
		attempts[j.Event] = j.Attempt
	}
	if len(jobs) != 2 || attempts[fresh] != 2 || attempts[notRun] != 1 {
		t.Fatalf("claimed after resume: attempts by event %v, want both, the retried one's second attempt", attempts)
	}
	// Resumed, new events queue as before.
	if d := statusOf(t, e, ingest(t, e, "after", resumed, "billing"), "billing"); d.Status != queue.Pending {
		t.Errorf("event after resume: %s, want pending", d.Status)
	}
	if r := mustResume(t, e, "billing", resumed); !r.Already {
		t.Errorf("second resume: %+v, want already", r)
	}
}

// Whatever queues a delivery of a paused target (replay, a redelivery
// reviving a dead one, backfill, a restart's recovery, an unclaim, an
// interrupted attempt's release) leaves it paused.
func testPausedStaysPaused(t *testing.T, e Engine) {
	ctx := context.Background()
	now := t0.Add(time.Hour)
	dead := ingest(t, e, "dead", t0, "billing")
	done := ingest(t, e, "done", t0.Add(time.Second), "billing")
	for _, j := range claim(t, e, 10, now) {
		if j.Event == dead {
			complete(t, e, j, finishDead(j, now, "status 500", "", false), now)
		} else {
			complete(t, e, j, finishOK(j, now), now)
		}
	}
	left := ingest(t, e, "left", t0.Add(2*time.Second), "billing")
	unclaimed := ingest(t, e, "unclaimed", t0.Add(3*time.Second), "billing")
	released := ingest(t, e, "released", t0.Add(4*time.Second), "billing")
	jobs := claim(t, e, 10, now)
	if len(jobs) != 3 {
		t.Fatalf("claimed %d, want 3", len(jobs))
	}
	mustPause(t, e, "billing", now)
	for _, j := range jobs {
		switch j.Event {
		case unclaimed:
			if err := e.Unclaim(ctx, []*queue.Job{j}, now); err != nil {
				t.Fatal(err)
			}
		case released:
			f := finishFailed(j, now, time.Time{}, "interrupted by shutdown")
			f.Release = true
			complete(t, e, j, f, now)
		}
	}
	if n, err := e.Recover(ctx, now); err != nil || n != 1 {
		t.Fatalf("recover: %d %v, want the 1 left running", n, err)
	}
	// A redelivery revives the dead one, a replay queues the done one.
	again := event("dead")
	again.ReceivedAt = now
	if res, err := e.IngestEvent(ctx, again, []string{"billing"}); err != nil || res.Revived != 1 {
		t.Fatalf("redelivery: %+v %v, want 1 revived", res, err)
	}
	if r, err := e.Replay(ctx, queue.ReplaySelector{Event: done}, now); err != nil || r.Queued != 1 {
		t.Fatalf("replay: %+v %v, want 1 queued", r, err)
	}
	backfilled := ingest(t, e, "backfilled", t0.Add(5*time.Second), "mail")
	if b, err := e.Backfill(ctx, queue.BackfillSelector{Target: "billing", Event: backfilled, Matches: func(string, string) bool { return true }}, now); err != nil || b.Queued != 1 {
		t.Fatalf("backfill: %+v %v, want 1 queued", b, err)
	}
	for name, ev := range map[string]int64{"revived": dead, "replayed": done, "recovered": left, "unclaimed": unclaimed, "released": released, "backfilled": backfilled} {
		if d := statusOf(t, e, ev, "billing"); d.Status != queue.Paused {
			t.Errorf("%s delivery of a paused target: %s, want paused", name, d.Status)
		}
	}
	if jobs := claim(t, e, 10, now.Add(24*time.Hour)); len(jobs) != 1 || jobs[0].Target != "mail" {
		t.Errorf("claimed %v, want only the other target's", jobs)
	}
	if r := mustResume(t, e, "billing", now); r.Deliveries != 6 {
		t.Errorf("resume released %d, want 6", r.Deliveries)
	}
}

// Defer returns claimed jobs to the queue due at the times given, their
// claim not counted; a paused target's stay paused.
func testDefer(t *testing.T, e Engine) {
	ctx := context.Background()
	first := ingest(t, e, "first", t0, "billing")
	second := ingest(t, e, "second", t0.Add(time.Second), "billing")
	j := claimOne(t, e, t0)
	// The first one fails once: it is retrying when claimed again.
	complete(t, e, j, finishFailed(j, t0, t0.Add(time.Second), "boom"), t0.Add(time.Second))
	jobs := claim(t, e, 10, t0.Add(2*time.Second))
	if len(jobs) != 2 {
		t.Fatalf("claimed %d, want 2", len(jobs))
	}
	slices.SortFunc(jobs, func(a, b *queue.Job) int { return int(a.Event - b.Event) })
	at := []time.Time{t0.Add(time.Minute), t0.Add(2 * time.Minute)}
	if err := e.Defer(ctx, jobs, at); err != nil {
		t.Fatal(err)
	}
	if d := statusOf(t, e, first, "billing"); d.Status != queue.Retrying || d.Attempts != 1 || !d.RunAt.Equal(at[0]) {
		t.Errorf("deferred retry: %+v, want retrying after 1 attempt, due %v", d, at[0])
	}
	if d := statusOf(t, e, second, "billing"); d.Status != queue.Pending || d.Attempts != 0 || !d.RunAt.Equal(at[1]) {
		t.Errorf("deferred first attempt: %+v, want pending, due %v", d, at[1])
	}
	if got := claim(t, e, 10, at[0].Add(-time.Millisecond)); len(got) != 0 {
		t.Errorf("claimed %d before their time, want none", len(got))
	}
	if next, ok, err := e.NextDue(ctx, nil); err != nil || !ok || !next.Equal(at[0]) {
		t.Errorf("next due %v %v %v, want %v", next, ok, err, at[0])
	}
	got := claim(t, e, 10, at[0])
	if len(got) != 1 || got[0].Event != first || got[0].Attempt != 2 {
		t.Fatalf("claimed at the first turn: %+v, want the first, attempt 2", got)
	}
	mustPause(t, e, "billing", at[0])
	if err := e.Defer(ctx, got, []time.Time{at[1]}); err != nil {
		t.Fatal(err)
	}
	if d := statusOf(t, e, first, "billing"); d.Status != queue.Paused || d.Attempts != 1 {
		t.Errorf("deferred while paused: %+v, want paused after 1 attempt", d)
	}
}

// The retention sweep keeps the payload of an event whose delivery is
// paused: it is work still to do.
func testPausedNotSwept(t *testing.T, e Engine) {
	ctx := context.Background()
	now := t0.Add(100 * 24 * time.Hour)
	held := ingest(t, e, "held", t0, "billing")
	ingest(t, e, "newest", now, "mail")
	mustPause(t, e, "billing", t0)
	swept, deleted, err := e.Sweep(ctx, now.Add(-30*24*time.Hour), now.Add(-90*24*time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	if swept != 0 || deleted != 0 {
		t.Errorf("swept %d, deleted %d, want none: the paused delivery still needs its event", swept, deleted)
	}
	ev, err := e.GetEvent(ctx, held)
	if err != nil || string(ev.Body) != `{"id":"held"}` {
		t.Errorf("the paused delivery's event: %+v %v, want its body kept", ev, err)
	}
}

// With two targets paused, resuming one leaves the other held, for the
// events queued since too; once neither is paused, both queue as before.
func testResumeOneOfTwo(t *testing.T, e Engine) {
	mustPause(t, e, "billing", t0)
	mustPause(t, e, "mail", t0)
	mustResume(t, e, "billing", t0.Add(time.Minute))
	ev := ingest(t, e, "one", t0.Add(2*time.Minute), "billing", "mail")
	if b, m := statusOf(t, e, ev, "billing").Status, statusOf(t, e, ev, "mail").Status; b != queue.Pending || m != queue.Paused {
		t.Errorf("after resuming billing only: billing %s, mail %s; want pending and paused", b, m)
	}
	if r := mustResume(t, e, "mail", t0.Add(3*time.Minute)); r.Deliveries != 1 {
		t.Errorf("resume mail released %d, want 1", r.Deliveries)
	}
	ev = ingest(t, e, "two", t0.Add(4*time.Minute), "billing", "mail")
	for _, target := range []string{"billing", "mail"} {
		if d := statusOf(t, e, ev, target); d.Status != queue.Pending {
			t.Errorf("after both resumed, %s: %s, want pending", target, d.Status)
		}
	}
	// Paused again after that, as the first time.
	mustPause(t, e, "mail", t0.Add(5*time.Minute))
	ev = ingest(t, e, "three", t0.Add(6*time.Minute), "mail")
	if d := statusOf(t, e, ev, "mail"); d.Status != queue.Paused {
		t.Errorf("paused a second time: %s, want paused", d.Status)
	}
}
