package enginetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"hookbox/dedupe"
	"hookbox/queue"
)

var claimTests = []test{
	{"Stale token is fenced", testStaleTokenIsFenced},
	{"Order and skip", testClaimOrderAndSkip},
	{"Renew", testRenew},
	{"Unclaim", testUnclaim},
	{"Empty body is not swept", testEmptyBodyIsNotSwept},
}

var backoffTests = []test{
	{"Next due", testNextDue},
}

var deadTests = []test{
	{"Redelivery revives", testRedeliveryRevives},
	{"Queued again clears the dead reason", testQueuedAgainClearsDeadReason},
}

var replayTests = []test{
	{"Selections", testReplaySelections},
	{"Counts running", testReplayCountsRunning},
}

var backfillTests = []test{
	{"New target", testBackfill},
}

var recoveryTests = []test{
	{"Running left by a stop", testRecover},
}

var readTests = []test{
	{"Attempts", testAttempts},
	{"Queue stats", testQueueStats},
}

// A claim whose lease passed is taken over with a fresh token; the first
// claim's token can then neither renew nor complete (only the attempt log
// records it, as stale), and the current one can.
func testStaleTokenIsFenced(t *testing.T, e Engine) {
	ctx := context.Background()
	ev := ingest(t, e, "evt_1", t0, "web")

	const lease = 100 * time.Millisecond
	first, err := e.Claim(ctx, 10, lease, t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 1 {
		t.Fatalf("first claim: %d jobs, want 1", len(first))
	}
	if again, err := e.Claim(ctx, 10, lease, t0.Add(lease/2), nil); err != nil || len(again) != 0 {
		t.Fatalf("claim within the lease: %d jobs, err %v; want none", len(again), err)
	}

	// The lease passes: the delivery is presumed crashed and claimed again.
	t1 := t0.Add(2 * lease)
	second, err := e.Claim(ctx, 10, lease, t1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(second) != 1 {
		t.Fatalf("claim after the lease: %d jobs, want 1", len(second))
	}
	if first[0].Token == second[0].Token {
		t.Fatalf("both claims got token %d, want a fresh one", first[0].Token)
	}
	if second[0].Attempt != 2 {
		t.Errorf("second claim attempt=%d, want 2", second[0].Attempt)
	}
	if n, err := e.Renew(ctx, first, time.Hour, t1); err != nil || n != 0 {
		t.Errorf("renew under the stale token: %d renewed, %v; want 0", n, err)
	}
	if d := delivery(t, e, ev); !d.RunAt.Equal(t1.Add(lease)) {
		t.Errorf("after the stale renewal: lease until %v, want %v (the current claim's)", d.RunAt, t1.Add(lease))
	}

	ok := queue.Finish{Attempt: queue.Attempt{Number: 1, StartedAt: t0, Outcome: "ok"}}
	if err := e.Complete(ctx, first[0], ok, t1); !errors.Is(err, queue.ErrStale) {
		t.Fatalf("stale completion: err=%v, want ErrStale", err)
	}
	d := delivery(t, e, ev)
	if d.Status != queue.Running || d.Attempts != 2 {
		t.Errorf("after the stale completion: status=%s attempts=%d, want running 2 (unchanged)", d.Status, d.Attempts)
	}

	failed := queue.Finish{Attempt: queue.Attempt{Number: 2, StartedAt: t1, Outcome: "failed", Error: "status 500"}, Next: t1.Add(time.Second)}
	if err := e.Complete(ctx, second[0], failed, t1); err != nil {
		t.Fatalf("current completion: %v", err)
	}
	d = delivery(t, e, ev)
	if d.Status != queue.Retrying || d.Attempts != 2 || d.LastError != "status 500" {
		t.Errorf("after the current completion: status=%s attempts=%d last_error=%q, want retrying 2 %q", d.Status, d.Attempts, d.LastError, "status 500")
	}

	attempts, err := e.Attempts(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, a := range attempts {
		outcomes = append(outcomes, a.Outcome)
	}
	if fmt.Sprint(outcomes) != "[stale failed]" {
		t.Errorf("attempt log=%v, want [stale failed]", outcomes)
	}
}

// A claim takes the due deliveries earliest first, up to its size, with
// their events, and leaves out those it is told to skip (the caller's own,
// running past their lease).
func testClaimOrderAndSkip(t *testing.T, e Engine) {
	ctx := context.Background()
	var evs []int64
	for i := range 3 {
		evs = append(evs, ingest(t, e, fmt.Sprintf("evt_%d", i), t0.Add(time.Duration(2-i)*time.Second), "web"))
	}
	ingest(t, e, "later", t0.Add(time.Hour), "web") // not due yet
	now := t0.Add(time.Minute)
	jobs, err := e.Claim(ctx, 2, time.Second, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The claim's jobs come in no particular order.
	slices.SortFunc(jobs, func(a, b *queue.Job) int { return int(b.Event - a.Event) })
	if len(jobs) != 2 || jobs[0].Event != evs[2] || jobs[1].Event != evs[1] {
		t.Fatalf("claim of 2: %+v, want events %d and %d, the earliest due", jobs, evs[2], evs[1])
	}
	j := jobs[0]
	if j.Source != "stripe" || j.EventID != "evt_2" || j.Type != "invoice.paid" || j.ContentType != "application/json" ||
		string(j.Body) != `{"id":"evt_2"}` || !j.ReceivedAt.Equal(t0) || j.Target != "web" || j.Attempt != 1 || j.Swept {
		t.Errorf("claimed job %+v, want evt_2 to web, first attempt, with its event", j)
	}
	// Both leases pass; skipping them, a claim takes the third only.
	later := now.Add(time.Minute)
	rest, err := e.Claim(ctx, 10, time.Second, later, []int64{jobs[0].Delivery, jobs[1].Delivery})
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 1 || rest[0].Event != evs[0] {
		t.Fatalf("claim skipping the first two: %+v, want event %d alone", rest, evs[0])
	}
	if again := claim(t, e, 10, later); len(again) != 2 {
		t.Fatalf("claim without skipping: %d jobs, want the two past their lease", len(again))
	}
}

// Renew extends the leases of the jobs still running under their token and
// leaves the others alone.
func testRenew(t *testing.T, e Engine) {
	ctx := context.Background()
	now := t0.Add(time.Minute)
	ingest(t, e, "evt_a", t0, "sink")
	ingest(t, e, "evt_b", t0, "sink")
	jobs := claim(t, e, 2, now)
	if len(jobs) != 2 {
		t.Fatalf("claim: %d jobs, want 2", len(jobs))
	}
	done := jobs[0]
	complete(t, e, done, finishOK(done, now), now)
	later := now.Add(30 * time.Second)
	n, err := e.Renew(ctx, jobs, time.Minute, later)
	if err != nil || n != 1 {
		t.Fatalf("renew: %d renewed, %v; want 1 (the other is done)", n, err)
	}
	running := jobs[1]
	if d := delivery(t, e, running.Event); d.Status != queue.Running || !d.RunAt.Equal(later.Add(time.Minute)) {
		t.Errorf("renewed delivery: %s, lease until %v; want running until %v", d.Status, d.RunAt, later.Add(time.Minute))
	}
	if d := delivery(t, e, done.Event); d.Status != queue.Done {
		t.Errorf("finished delivery: %s after renew, want done", d.Status)
	}
	if jobs := claim(t, e, 10, later.Add(30*time.Second)); len(jobs) != 0 {
		t.Errorf("claim within the renewed lease took %d job(s)", len(jobs))
	}
}

// A job claimed and returned unstarted goes back as it was: pending, or
// retrying for a retry, its attempt not counted, due at once.
func testUnclaim(t *testing.T, e Engine) {
	ctx := context.Background()
	now := t0.Add(time.Minute)
	ev := ingest(t, e, "evt_u", t0, "sink")
	jobs := claim(t, e, 1, now)
	if err := e.Unclaim(ctx, jobs, now); err != nil {
		t.Fatal(err)
	}
	if d := delivery(t, e, ev); d.Status != queue.Pending || d.Attempts != 0 || !d.RunAt.Equal(now) {
		t.Errorf("after unclaiming the first attempt: %s after %d attempts due %v, want pending after 0 due %v", d.Status, d.Attempts, d.RunAt, now)
	}
	j := claimOne(t, e, now)
	complete(t, e, j, finishFailed(j, now, now, "boom"), now)
	if jobs = claim(t, e, 1, now); len(jobs) != 1 || jobs[0].Attempt != 2 {
		t.Fatalf("second claim: %+v, want attempt 2", jobs)
	}
	if err := e.Unclaim(ctx, jobs, now); err != nil {
		t.Fatal(err)
	}
	if d := delivery(t, e, ev); d.Status != queue.Retrying || d.Attempts != 1 {
		t.Errorf("after unclaim: %s after %d attempts, want retrying after 1", d.Status, d.Attempts)
	}
	// A stale token returns nothing: the delivery was taken over.
	stale := claimOne(t, e, now)
	taken, err := e.Claim(ctx, 1, time.Minute, now.Add(2*time.Minute), nil)
	if err != nil || len(taken) != 1 {
		t.Fatalf("claim past the lease: %d jobs, %v", len(taken), err)
	}
	if err := e.Unclaim(ctx, []*queue.Job{stale}, now); err != nil {
		t.Fatal(err)
	}
	if d := delivery(t, e, ev); d.Status != queue.Running || d.Attempts != 3 {
		t.Errorf("after unclaiming under a stale token: %s after %d attempts, want running after 3 (unchanged)", d.Status, d.Attempts)
	}
}

// An event with an empty body (the id came from a header) is delivered like
// any other: an empty payload is not a payload retention removed.
func testEmptyBodyIsNotSwept(t *testing.T, e Engine) {
	ev := event("empty")
	ev.Body = []byte{}
	res, err := e.IngestEvent(context.Background(), ev, []string{"sink"})
	if err != nil {
		t.Fatal(err)
	}
	j := claimOne(t, e, t0)
	if j.Event != res.ID {
		t.Fatalf("claimed %+v, want the empty event's delivery", j)
	}
	if j.Swept || len(j.Body) != 0 {
		t.Errorf("empty body claimed as swept=%v body=%q, want not swept and empty", j.Swept, j.Body)
	}
}

// A delivery is due when queued, again when its lease passes, and after a
// failure when its retry is: NextDue says when, leaving out the deliveries
// it is told to, and a release makes it due at once with its attempt not
// counted.
func testNextDue(t *testing.T, e Engine) {
	ctx := context.Background()
	nextDue := func(except ...int64) (time.Time, bool) {
		t.Helper()
		at, ok, err := e.NextDue(ctx, except)
		if err != nil {
			t.Fatal(err)
		}
		return at, ok
	}
	if at, ok := nextDue(); ok {
		t.Fatalf("empty store: next due %v, want none", at)
	}
	ev := ingest(t, e, "evt_due", t0, "web")
	if at, ok := nextDue(); !ok || !at.Equal(t0) {
		t.Fatalf("queued: next due %v %v, want %v", at, ok, t0)
	}
	j := claimOne(t, e, t0)
	if at, ok := nextDue(); !ok || !at.Equal(t0.Add(time.Minute)) {
		t.Errorf("claimed: next due %v %v, want the lease's end %v", at, ok, t0.Add(time.Minute))
	}
	if at, ok := nextDue(j.Delivery); ok {
		t.Errorf("claimed, left out: next due %v, want none", at)
	}
	retry := t0.Add(10 * time.Second)
	complete(t, e, j, finishFailed(j, t0, retry, "status 503"), t0)
	if at, ok := nextDue(); !ok || !at.Equal(retry) {
		t.Errorf("failed: next due %v %v, want the retry at %v", at, ok, retry)
	}
	if jobs := claim(t, e, 10, retry.Add(-time.Millisecond)); len(jobs) != 0 {
		t.Fatalf("claim before the retry: %d jobs, want none", len(jobs))
	}
	j = claimOne(t, e, retry)
	if j.Attempt != 2 {
		t.Errorf("retry claimed as attempt %d, want 2", j.Attempt)
	}
	stop := retry.Add(time.Second)
	release := queue.Finish{Attempt: queue.Attempt{Number: 2, StartedAt: retry, Outcome: "interrupted", Error: "interrupted by shutdown"}, Release: true}
	complete(t, e, j, release, stop)
	d := delivery(t, e, ev)
	if d.Status != queue.Retrying || d.Attempts != 1 || !d.RunAt.Equal(stop) || d.LastError != "interrupted by shutdown" {
		t.Errorf("released: %s after %d attempts, due %v, error %q; want retrying after 1, due %v", d.Status, d.Attempts, d.RunAt, d.LastError, stop)
	}
	if at, ok := nextDue(); !ok || !at.Equal(stop) {
		t.Errorf("released: next due %v %v, want %v", at, ok, stop)
	}
	j = claimOne(t, e, stop)
	complete(t, e, j, finishOK(j, stop), stop)
	if d := delivery(t, e, ev); d.Status != queue.Done || d.Attempts != 2 || !d.DoneAt.Equal(stop) || d.LastError != "" {
		t.Errorf("done: %+v, want done after 2 attempts at %v, no error", d, stop)
	}
	if at, ok := nextDue(); ok {
		t.Errorf("done: next due %v, want none", at)
	}
}

// A delivery goes dead with its dead letter (and its alert, if asked for);
// a redelivery of its event puts it back to pending with its attempts
// reset, and marks the dead letter revived, its alert no longer due. A
// redelivery of an event whose delivery is queued or done changes nothing.
func testRedeliveryRevives(t *testing.T, e Engine) {
	ctx := context.Background()
	ev := ingest(t, e, "evt_dead", t0, "sink")
	j := claimOne(t, e, t0)
	complete(t, e, j, finishDead(j, t0, "status 500", "", true), t0)
	d := delivery(t, e, ev)
	if d.Status != queue.Dead || d.Attempts != 1 || d.LastError != "status 500" || !d.DoneAt.Equal(t0) || d.DeadReason != "" {
		t.Fatalf("dead delivery %+v, want dead after 1 attempt with its error", d)
	}
	letters, err := e.DeadLetters(ctx, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(letters) != 1 {
		t.Fatalf("%d dead letters, want 1", len(letters))
	}
	l := letters[0]
	if l.Delivery != d.ID || l.Event != ev || l.Source != "stripe" || l.EventID != "evt_dead" || l.Type != "invoice.paid" ||
		l.Target != "sink" || l.Attempts != 1 || l.Error != "status 500" || !l.DeadAt.Equal(t0) || !l.AlertDueAt.Equal(t0) || !l.RevivedAt.IsZero() {
		t.Errorf("dead letter %+v, want the delivery's, alert due at %v", l, t0)
	}

	again := event("evt_dead")
	again.ReceivedAt = t0.Add(time.Minute)
	res, err := e.IngestEvent(ctx, again, []string{"sink"})
	if err != nil || !res.Duplicate || res.Revived != 1 {
		t.Fatalf("redelivery: %+v, %v; want a duplicate that revived 1", res, err)
	}
	d = delivery(t, e, ev)
	if d.Status != queue.Pending || d.Attempts != 0 || d.LastError != "" || !d.DoneAt.IsZero() || !d.RunAt.Equal(again.ReceivedAt) {
		t.Errorf("revived delivery %+v, want pending, attempts reset, due at %v", d, again.ReceivedAt)
	}
	if letters, _ := e.DeadLetters(ctx, false, 0); len(letters) != 0 {
		t.Errorf("dead letters not revived: %+v, want none", letters)
	}
	all, err := e.DeadLetters(ctx, true, 0)
	if err != nil || len(all) != 1 || !all[0].RevivedAt.Equal(again.ReceivedAt) || !all[0].AlertDueAt.IsZero() {
		t.Errorf("all dead letters %+v (%v), want the one revived at %v, its alert no longer due", all, err, again.ReceivedAt)
	}
	if due, err := e.DueAlerts(ctx, again.ReceivedAt, 10); err != nil || len(due) != 0 {
		t.Errorf("due alerts after the revival: %+v, %v; want none", due, err)
	}
	for _, state := range []string{queue.Pending, queue.Done} {
		if state == queue.Done {
			j := claimOne(t, e, again.ReceivedAt)
			complete(t, e, j, finishOK(j, again.ReceivedAt), again.ReceivedAt)
		}
		res, err := e.IngestEvent(ctx, event("evt_dead"), nil)
		if err != nil || res.Revived != 0 {
			t.Errorf("redelivery of a %s delivery: revived %d, %v; want 0", state, res.Revived, err)
		}
		if d := delivery(t, e, ev); d.Status != state || d.Attempts != map[string]int{queue.Pending: 0, queue.Done: 1}[state] {
			t.Errorf("after the redelivery of a %s delivery: %+v, want it unchanged", state, d)
		}
	}
}

// A dead delivery queued again (replayed, or redelivered by its sender)
// loses its dead reason: it has not gone dead again.
func testQueuedAgainClearsDeadReason(t *testing.T, e Engine) {
	for _, again := range []string{"Replay", "Redelivery"} {
		t.Run(again, func(t *testing.T) {
			ctx := context.Background()
			id := "evt_perm_" + again
			ev := ingest(t, e, id, t0, "sink")
			j := claimOne(t, e, t0)
			complete(t, e, j, finishDead(j, t0, "status 410", "permanent: status 410", false), t0)
			if d := delivery(t, e, ev); d.DeadReason != "permanent: status 410" {
				t.Fatalf("dead reason %q, want %q", d.DeadReason, "permanent: status 410")
			}
			if again == "Replay" {
				if r, err := e.Replay(ctx, queue.ReplaySelector{DeadOnly: true}, t0); err != nil || r.Queued != 1 {
					t.Fatalf("replay: %+v, %v", r, err)
				}
			} else {
				res, err := e.IngestEvent(ctx, event(id), nil)
				if err != nil || res.Revived != 1 {
					t.Fatalf("redelivery: revived %d, %v; want the dead delivery revived", res.Revived, err)
				}
			}
			if d := delivery(t, e, ev); d.Status != queue.Pending || d.DeadReason != "" {
				t.Errorf("after a %s: %s, reason %q; want pending with none", again, d.Status, d.DeadReason)
			}
			// Finished again, for the next case's claim.
			j = claimOne(t, e, t0)
			complete(t, e, j, finishOK(j, t0), t0)
		})
	}
}

// Replay queues again what it selects, attempts reset, whatever its status
// but running; it leaves out deliveries whose payload retention removed.
func testReplaySelections(t *testing.T, e Engine) {
	ctx := context.Background()
	now := t0.Add(time.Hour)
	finishAll := func(targetDead string) {
		t.Helper()
		for _, j := range claim(t, e, 100, now) {
			if j.Target == targetDead {
				complete(t, e, j, finishDead(j, now, "boom", "", false), now)
			} else {
				complete(t, e, j, finishOK(j, now), now)
			}
		}
	}
	early := ingest(t, e, "early", t0, "a", "b")
	late := ingest(t, e, "late", t0.Add(10*time.Minute), "a", "b")
	finishAll("b")
	if _, err := e.Replay(ctx, queue.ReplaySelector{}, now); err == nil {
		t.Error("a replay selecting nothing succeeded, want an error")
	}
	for _, c := range []struct {
		name string
		sel  queue.ReplaySelector
		want map[int64][]string // event → targets queued again
	}{
		{"One event", queue.ReplaySelector{Event: early}, map[int64][]string{early: {"a", "b"}}},
		{"One event's target", queue.ReplaySelector{Event: late, Target: "a"}, map[int64][]string{late: {"a"}}},
		{"Dead", queue.ReplaySelector{DeadOnly: true}, map[int64][]string{early: {"b"}, late: {"b"}}},
		{"Dead of one event", queue.ReplaySelector{DeadOnly: true, Event: late}, map[int64][]string{late: {"b"}}},
		{"Since", queue.ReplaySelector{Since: t0.Add(time.Minute)}, map[int64][]string{late: {"a", "b"}}},
		{"Until", queue.ReplaySelector{Since: t0.Add(-time.Minute), Until: t0.Add(time.Minute), Target: "b"}, map[int64][]string{early: {"b"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := 0
			for _, ts := range c.want {
				want += len(ts)
			}
			r, err := e.Replay(ctx, c.sel, now)
			if err != nil {
				t.Fatal(err)
			}
			if r.Queued != int64(want) || r.Swept != 0 || r.Running != 0 || r.Changed != 0 {
				t.Errorf("replay = %+v, want %d queued again", r, want)
			}
			for _, ev := range []int64{early, late} {
				var pending []string
				for _, d := range deliveries(t, e, ev) {
					if d.Status == queue.Pending {
						if d.Attempts != 0 || d.LastError != "" || !d.RunAt.Equal(now) {
							t.Errorf("replayed delivery %+v, want attempts reset, due at %v", d, now)
						}
						pending = append(pending, d.Target)
					}
				}
				if !slices.Equal(pending, c.want[ev]) {
					t.Errorf("event %d: %v queued again, want %v", ev, pending, c.want[ev])
				}
			}
			finishAll("b")
		})
	}
	t.Run("Swept", func(t *testing.T) {
		if r, err := e.Replay(ctx, queue.ReplaySelector{DeadOnly: true}, now); err != nil || r.Queued != 2 {
			t.Fatalf("replay of the dead: %+v, %v", r, err)
		}
		finishAll("")
		if swept, _, err := e.Sweep(ctx, now.Add(time.Hour), time.Time{}, 100); err != nil || swept != 2 {
			t.Fatalf("sweep: %d swept, %v; want both events", swept, err)
		}
		r, err := e.Replay(ctx, queue.ReplaySelector{Since: t0.Add(-time.Hour)}, now)
		if err != nil {
			t.Fatal(err)
		}
		if r.Queued != 0 || r.Swept != 4 {
			t.Errorf("replay of swept events = %+v, want nothing queued and the 4 deliveries left out as swept", r)
		}
	})
}

// Replay leaves a running delivery (an attempt under way, or claimed for
// one) as it is and counts it, so the command can say so.
func testReplayCountsRunning(t *testing.T, e Engine) {
	ctx := context.Background()
	now := t0.Add(time.Minute)
	ingest(t, e, "evt_1", t0, "sink")
	ingest(t, e, "evt_2", t0, "sink")
	if jobs := claim(t, e, 1, now); len(jobs) != 1 {
		t.Fatalf("claim: %d jobs", len(jobs))
	}
	r, err := e.Replay(ctx, queue.ReplaySelector{Since: now.Add(-time.Hour)}, now)
	if err != nil {
		t.Fatal(err)
	}
	if r.Queued != 1 || r.Running != 1 || r.Swept != 0 {
		t.Errorf("replay = %+v, want 1 queued again and 1 left running", r)
	}
}

// Backfill gives a target a delivery of each selected event it matches and
// has none for, once; swept events are counted, not queued.
func testBackfill(t *testing.T, e Engine) {
	ctx := context.Background()
	now := t0.Add(time.Hour)
	matches := func(source, typ string) bool { return source == "stripe" && typ == "invoice.paid" }
	oldest := ingest(t, e, "oldest", t0.Add(-time.Hour), "old")
	a := ingest(t, e, "a", t0, "old")
	other := event("other")
	other.Type = "customer.created"
	if _, err := e.IngestEvent(ctx, other, []string{"old"}); err != nil {
		t.Fatal(err)
	}
	has := ingest(t, e, "has", t0, "old", "new")
	later := ingest(t, e, "later", t0.Add(20*time.Minute), "old")

	b, err := e.Backfill(ctx, queue.BackfillSelector{Target: "new", Since: t0, Until: t0.Add(10 * time.Minute), Matches: matches}, now)
	if err != nil {
		t.Fatal(err)
	}
	if b.Queued != 1 || b.Swept != 0 {
		t.Fatalf("backfill = %+v, want 1 queued (event a)", b)
	}
	targetsOf := func(ev int64) (out []string) {
		for _, d := range deliveries(t, e, ev) {
			if d.Target == "new" && ev != has && (d.Status != queue.Pending || d.Attempts != 0 || !d.RunAt.Equal(now) || !d.CreatedAt.Equal(now)) {
				t.Errorf("backfilled delivery %+v, want pending, created and due at %v", d, now)
			}
			out = append(out, d.Target)
		}
		return out
	}
	for ev, want := range map[int64][]string{oldest: {"old"}, a: {"old", "new"}, has: {"old", "new"}, later: {"old"}} {
		if got := targetsOf(ev); !slices.Equal(got, want) {
			t.Errorf("event %d: deliveries to %v, want %v", ev, got, want)
		}
	}
	if b, err := e.Backfill(ctx, queue.BackfillSelector{Target: "new", Since: t0, Until: t0.Add(10 * time.Minute), Matches: matches}, now); err != nil || b.Queued != 0 {
		t.Errorf("backfill again: %+v, %v; want nothing more", b, err)
	}
	if b, err := e.Backfill(ctx, queue.BackfillSelector{Target: "new", Event: later, Matches: matches}, now); err != nil || b.Queued != 1 {
		t.Errorf("backfill of one event: %+v, %v; want 1", b, err)
	}
	// The oldest event's payload is swept once its delivery is done.
	for _, j := range claim(t, e, 100, now) {
		complete(t, e, j, finishOK(j, now), now)
	}
	if _, _, err := e.Sweep(ctx, t0.Add(-time.Minute), time.Time{}, 100); err != nil {
		t.Fatal(err)
	}
	b, err = e.Backfill(ctx, queue.BackfillSelector{Target: "new", Matches: matches}, now)
	if err != nil || b.Queued != 0 || b.Swept != 1 {
		t.Errorf("backfill with a swept event: %+v, %v; want nothing queued, 1 left out as swept", b, err)
	}
	if got := targetsOf(oldest); !slices.Equal(got, []string{"old"}) {
		t.Errorf("swept event: deliveries to %v, want old only", got)
	}
}

// The deliveries a stopped process left running are listed by their
// command's identity, and Recover makes them due now, retrying, saying why.
func testRecover(t *testing.T, e Engine) {
	ctx := context.Background()
	now := t0.Add(time.Minute)
	a := ingest(t, e, "evt_a", t0, "sink")
	b := ingest(t, e, "evt_b", t0, "cmd")
	done := ingest(t, e, "evt_done", t0, "sink")
	jobs := claim(t, e, 10, now)
	if len(jobs) != 3 {
		t.Fatalf("claim: %d jobs, want 3", len(jobs))
	}
	for _, j := range jobs {
		if j.Event == done {
			complete(t, e, j, finishOK(j, now), now)
		}
	}
	keys, err := e.Running(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(keys, func(x, y queue.RunningKey) int { return cmpString(x.EventID, y.EventID) })
	for i := range keys {
		keys[i].Replica = "" // the replica that claimed them, where the engine records it
	}
	if want := []queue.RunningKey{{Source: "stripe", EventID: "evt_a", Target: "sink"}, {Source: "stripe", EventID: "evt_b", Target: "cmd"}}; !slices.Equal(keys, want) {
		t.Fatalf("running %v, want %v", keys, want)
	}
	restart := now.Add(time.Second)
	n, err := e.Recover(ctx, restart)
	if err != nil || n != 2 {
		t.Fatalf("recover: %d, %v; want 2", n, err)
	}
	for _, ev := range []int64{a, b} {
		d := delivery(t, e, ev)
		if d.Status != queue.Retrying || d.Attempts != 1 || !d.RunAt.Equal(restart) || d.LastError != "interrupted: hookbox stopped during the attempt" {
			t.Errorf("recovered delivery %+v, want retrying after 1 attempt, due at %v, saying it was interrupted", d, restart)
		}
	}
	if d := delivery(t, e, done); d.Status != queue.Done {
		t.Errorf("finished delivery %s after recover, want done", d.Status)
	}
	if keys, err := e.Running(ctx); err != nil || len(keys) != 0 {
		t.Errorf("running after recover: %v, %v; want none", keys, err)
	}
	if jobs := claim(t, e, 10, restart); len(jobs) != 2 || jobs[0].Attempt != 2 {
		t.Errorf("claim after recover: %+v, want both, as their second attempt", jobs)
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Each attempt is recorded as the worker reported it, oldest first.
func testAttempts(t *testing.T, e Engine) {
	ctx := context.Background()
	if _, _, ok, err := e.AttemptSpan(ctx); err != nil || ok {
		t.Fatalf("attempt span of an empty store: ok %v, %v; want none", ok, err)
	}
	ev := ingest(t, e, "evt_att", t0, "cmd")
	exit := 75
	j := claimOne(t, e, t0)
	first := queue.Finish{Attempt: queue.Attempt{Number: 1, StartedAt: t0, Duration: 1500 * time.Microsecond, Outcome: "failed",
		ExitCode: &exit, Error: "exit status 75", Output: "try later\n"}, Next: t0.Add(time.Second)}
	complete(t, e, j, first, t0.Add(2*time.Millisecond))
	j = claimOne(t, e, t0.Add(time.Second))
	second := queue.Finish{Attempt: queue.Attempt{Number: 2, StartedAt: t0.Add(time.Second), Duration: 3 * time.Millisecond, Outcome: "ok", HTTPStatus: 204}}
	complete(t, e, j, second, t0.Add(time.Second+3*time.Millisecond))
	attempts, err := e.Attempts(ctx, delivery(t, e, ev).ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(attempts) != 2 {
		t.Fatalf("%d attempts, want 2", len(attempts))
	}
	a := attempts[0]
	if a.Number != 1 || !a.StartedAt.Equal(t0) || a.Duration != 1500*time.Microsecond || a.Outcome != "failed" ||
		a.ExitCode == nil || *a.ExitCode != 75 || a.HTTPStatus != 0 || a.Error != "exit status 75" || a.Output != "try later\n" {
		t.Errorf("first attempt %+v, want it as reported", a)
	}
	a = attempts[1]
	if a.Number != 2 || a.Outcome != "ok" || a.HTTPStatus != 204 || a.ExitCode != nil || a.Error != "" {
		t.Errorf("second attempt %+v, want it as reported", a)
	}
	firstAt, lastAt, ok, err := e.AttemptSpan(ctx)
	if err != nil || !ok || !firstAt.Equal(t0) || !lastAt.Equal(t0.Add(time.Second+3*time.Millisecond)) {
		t.Errorf("attempt span %v–%v (%v, %v), want %v–%v", firstAt, lastAt, ok, err, t0, t0.Add(time.Second+3*time.Millisecond))
	}
}

// QueueStats counts the queued deliveries by status and the dead letters
// not revived, and dates the oldest queued delivery; QueuedByTarget counts
// the queued ones of each target.
func testQueueStats(t *testing.T, e Engine) {
	ctx := context.Background()
	now := t0.Add(time.Hour)
	st, err := e.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.OldestQueued.IsZero() || len(st.ByStatus) != 5 {
		t.Fatalf("empty store: %+v, want 0 of each status, no oldest", st)
	}
	ingest(t, e, "running", t0.Add(-3*time.Minute), "a")
	ingest(t, e, "retrying", t0.Add(-2*time.Minute), "a")
	ingest(t, e, "dead", t0.Add(-time.Minute), "b")
	ingest(t, e, "done", t0.Add(-time.Minute), "b")
	ingest(t, e, "pending", t0, "a", "b")
	for _, j := range claim(t, e, 4, now) {
		switch j.EventID {
		case "retrying":
			complete(t, e, j, finishFailed(j, now, now.Add(time.Hour), "boom"), now)
		case "dead":
			complete(t, e, j, finishDead(j, now, "boom", "", false), now)
		case "done":
			complete(t, e, j, finishOK(j, now), now)
		}
	}
	st, err = e.QueueStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{queue.Pending: 2, queue.Running: 1, queue.Retrying: 1, queue.Dead: 1}
	for s, n := range want {
		if st.ByStatus[s] != n {
			t.Errorf("%s: %d, want %d (all: %v)", s, st.ByStatus[s], n, st.ByStatus)
		}
	}
	if !st.OldestQueued.Equal(t0.Add(-3 * time.Minute)) {
		t.Errorf("oldest queued %v, want %v", st.OldestQueued, t0.Add(-3*time.Minute))
	}
	byTarget, err := e.QueuedByTarget(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(byTarget) != "map[a:3 b:1]" {
		t.Errorf("queued by target %v, want a:3 b:1", byTarget)
	}
	// The metrics' one read: each target's waiting deliveries by status,
	// its dead letters, its oldest waiting delivery; and the budget's count.
	q, err := e.QueueByTarget(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(q) != 2 || q["a"] == nil || q["b"] == nil {
		t.Fatalf("queue by target %v, want targets a and b", q)
	}
	if got := fmt.Sprint(q["a"].ByStatus); got != "map[pending:1 retrying:1 running:1]" {
		t.Errorf("target a: %s, want pending:1 retrying:1 running:1", got)
	}
	if got := fmt.Sprint(q["b"].ByStatus); got != "map[dead:1 pending:1]" {
		t.Errorf("target b: %s, want dead:1 pending:1", got)
	}
	if !q["a"].OldestQueued.Equal(t0.Add(-3*time.Minute)) || !q["b"].OldestQueued.Equal(t0) {
		t.Errorf("oldest waiting: a %v, b %v, want %v and %v", q["a"].OldestQueued, q["b"].OldestQueued, t0.Add(-3*time.Minute), t0)
	}
	if n, err := e.Waiting(ctx); err != nil || n != 4 {
		t.Errorf("waiting %d (%v), want 4", n, err)
	}
	if list := mustList(t, e, dedupe.Filter{Status: queue.Retrying}); len(list) != 1 || list[0].EventID != "retrying" {
		t.Errorf("events with a retrying delivery: %+v, want the one", list)
	}
}
