package enginetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"hookbox/dedupe"
	"hookbox/health"
	"hookbox/queue"
)

var healthTests = []test{
	{"Source counts", testHealthSourceCounts},
	{"Queue ages", testHealthQueueAges},
	{"Receive to done", testHealthDoneLatency},
	{"Failures in a row", testHealthFailureStreaks},
	{"Alarms fire and resolve once", testHealthAlarms},
	{"Notices in order, retried", testHealthNotices},
}

// receive stores an event of source with id at at, new or a duplicate.
func receive(tb testing.TB, e Engine, source, id string, at time.Time, targets ...string) dedupe.Result {
	tb.Helper()
	ev := event(id)
	ev.Source, ev.ReceivedAt = source, at
	res, err := e.IngestEvent(context.Background(), ev, targets)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// The duplicates of a window are the redeliveries of the events received
// in it, and one for each earlier event redelivered in it.
func testHealthSourceCounts(t *testing.T, e Engine) {
	ctx := context.Background()
	since := t0.Add(-5 * time.Minute)
	receive(t, e, "stripe", "old", t0.Add(-20*time.Minute))
	for _, id := range []string{"a", "b", "c"} {
		receive(t, e, "stripe", id, t0)
	}
	receive(t, e, "stripe", "a", t0.Add(time.Minute))
	receive(t, e, "stripe", "a", t0.Add(time.Minute))
	receive(t, e, "stripe", "old", t0.Add(90*time.Second))
	receive(t, e, "stripe", "old", t0.Add(2*time.Minute))
	receive(t, e, "github", "g", t0)
	receive(t, e, "github", "g-old", t0.Add(-time.Hour))

	counts, err := e.SourceCounts(ctx, since)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]health.SourceCount{}
	for _, c := range counts {
		by[c.Source] = c
	}
	if c := by["stripe"]; c.Received != 3 || c.Duplicates != 3 || !c.Last.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("stripe = %+v, want 3 received, 3 duplicates (a twice, old once), last at t0+2m", c)
	}
	if c := by["github"]; c.Received != 1 || c.Duplicates != 0 || !c.Last.Equal(t0) {
		t.Errorf("github = %+v, want 1 received, 0 duplicates, last at t0", c)
	}
	if len(by) != 2 {
		t.Errorf("counts %+v, want stripe and github only", counts)
	}
	if counts, err := e.SourceCounts(ctx, t0.Add(time.Hour)); err != nil || len(counts) != 0 {
		t.Errorf("counts of an empty window = %+v, %v; want none", counts, err)
	}

	last, ok, err := e.LastEvent(ctx, "stripe")
	if err != nil || !ok || !last.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("last event of stripe = %v %v %v, want t0+2m (the last duplicate)", last, ok, err)
	}
	last, ok, err = e.LastEvent(ctx, "github")
	if err != nil || !ok || !last.Equal(t0) {
		t.Errorf("last event of github = %v %v %v, want t0", last, ok, err)
	}
	if _, ok, err := e.LastEvent(ctx, "nobody"); ok || err != nil {
		t.Errorf("last event of a source without events: ok=%v %v, want none", ok, err)
	}
}

func testHealthQueueAges(t *testing.T, e Engine) {
	ctx := context.Background()
	now := t0.Add(2 * time.Hour)
	ingest(t, e, "e1", t0, "a", "b")                       // 2h old
	ingest(t, e, "e2", now.Add(-30*time.Minute), "a")      // 30m
	ingest(t, e, "e3", now.Add(-5*time.Minute), "a")       // 5m
	ingest(t, e, "e4", now.Add(-10*time.Second), "a", "b") // 10s
	// A done delivery is no longer queued.
	done := ingest(t, e, "e5", t0.Add(-time.Hour), "c")
	jobs := claim(t, e, 10, t0.Add(-time.Hour))
	for _, j := range jobs {
		if j.Event == done {
			complete(t, e, j, finishOK(j, t0), t0)
		} else if err := e.Unclaim(ctx, []*queue.Job{j}, t0); err != nil {
			t.Fatal(err)
		}
	}
	ages, err := e.QueueAges(ctx, now, health.AgeEdges)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]health.QueueAge{}
	for _, a := range ages {
		by[a.Target] = a
	}
	if a := by["a"]; a.Queued != 4 || !a.Oldest.Equal(t0) || len(a.OlderThan) != 3 || a.OlderThan[0] != 3 || a.OlderThan[1] != 2 || a.OlderThan[2] != 1 {
		t.Errorf("target a = %+v, want 4 queued, oldest t0, 3/2/1 older than 1m/10m/1h", a)
	}
	if b := by["b"]; b.Queued != 2 || !b.Oldest.Equal(t0) || b.OlderThan[0] != 1 || b.OlderThan[2] != 1 {
		t.Errorf("target b = %+v, want 2 queued, oldest t0, 1 older than 1h", b)
	}
	if _, ok := by["c"]; ok || len(by) != 2 {
		t.Errorf("ages %+v, want a and b only (c's one delivery is done)", ages)
	}
}

// Receipt to done is measured on the deliveries done in the window, at
// the nearest rank.
func testHealthDoneLatency(t *testing.T, e Engine) {
	ctx := context.Background()
	for i := range 100 {
		ingest(t, e, "e"+string(rune('A'+i/26))+string(rune('a'+i%26)), t0, "web")
	}
	ingest(t, e, "other", t0, "mail")
	jobs := claim(t, e, 200, t0)
	n := 0
	for _, j := range jobs {
		if j.Target != "web" {
			continue
		}
		n++
		at := t0.Add(time.Duration(n) * time.Second) // 1s … 100s
		complete(t, e, j, finishOK(j, at), at)
	}
	l, err := e.DoneLatency(ctx, "web", t0)
	if err != nil || l.Done != 100 || l.P50 != 50*time.Second || l.P99 != 99*time.Second {
		t.Errorf("web since t0 = %+v, %v; want 100 done, p50 50s, p99 99s", l, err)
	}
	l, err = e.DoneLatency(ctx, "web", t0.Add(10*time.Second))
	if err != nil || l.Done != 91 || l.P50 != 55*time.Second || l.P99 != 100*time.Second {
		t.Errorf("web since t0+10s = %+v, %v; want 91 done, p50 55s, p99 100s", l, err)
	}
	if l, err := e.DoneLatency(ctx, "mail", t0); err != nil || l.Done != 0 || l.P99 != 0 {
		t.Errorf("mail (nothing done) = %+v, %v; want none", l, err)
	}
}

// A target's failed attempts count from its last success: a success
// resets them, a failure on any of its deliveries adds one, dead ones
// included.
func testHealthFailureStreaks(t *testing.T, e Engine) {
	ctx := context.Background()
	streak := func(want int, when string) {
		t.Helper()
		got, err := e.FailureStreaks(ctx, []string{"web", "mail"})
		if err != nil {
			t.Fatal(err)
		}
		if got["web"] != want || got["mail"] != 0 {
			t.Fatalf("%s: streaks %v, want web %d, mail 0", when, got, want)
		}
	}
	streak(0, "no attempt yet")
	ev1 := ingest(t, e, "e1", t0, "web")
	ev2 := ingest(t, e, "e2", t0, "web")
	ingest(t, e, "m", t0, "mail")
	byEvent := func(jobs []*queue.Job) map[int64]*queue.Job {
		m := map[int64]*queue.Job{}
		for _, j := range jobs {
			if j.Target == "web" {
				m[j.Event] = j
			}
		}
		return m
	}
	jobs := byEvent(claim(t, e, 10, t0))
	at := t0.Add(time.Second)
	complete(t, e, jobs[ev1], finishFailed(jobs[ev1], at, at, "status 500"), at)
	complete(t, e, jobs[ev2], finishFailed(jobs[ev2], at, t0.Add(3*time.Second), "status 500"), at)
	streak(2, "two failures")

	at = t0.Add(2 * time.Second)
	jobs = byEvent(claim(t, e, 10, at))
	complete(t, e, jobs[ev1], finishOK(jobs[ev1], at), at)
	streak(0, "a success after them") // ev2 is still retrying: its failure came before the success

	ev3 := ingest(t, e, "e3", at, "web")
	at = t0.Add(3 * time.Second)
	jobs = byEvent(claim(t, e, 10, at))
	complete(t, e, jobs[ev2], finishFailed(jobs[ev2], at, at.Add(time.Hour), "status 500"), at)
	complete(t, e, jobs[ev3], finishDead(jobs[ev3], at, "status 500", "", false), at)
	streak(2, "a retry and a dead one after the success")

	at = t0.Add(4 * time.Second)
	ev4 := ingest(t, e, "e4", at, "web")
	jobs = byEvent(claim(t, e, 10, at))
	complete(t, e, jobs[ev4], finishOK(jobs[ev4], at), at)
	streak(0, "another success")
}

func testHealthAlarms(t *testing.T, e Engine) {
	ctx := context.Background()
	fire := health.Alarm{Kind: health.OldestQueued, Subject: "web", Firing: true, Since: t0, Value: 700, Bound: 600}
	if ok, err := e.SetAlarm(ctx, fire, true); err != nil || !ok {
		t.Fatalf("fire: %v %v, want changed", ok, err)
	}
	again := fire
	again.Since, again.Value = t0.Add(time.Minute), 800
	if ok, err := e.SetAlarm(ctx, again, true); err != nil || ok {
		t.Fatalf("fire again: %v %v, want unchanged", ok, err)
	}
	resolve := health.Alarm{Kind: health.OldestQueued, Subject: "mail", Since: t0}
	if ok, err := e.SetAlarm(ctx, resolve, true); err != nil || ok {
		t.Fatalf("resolve an alarm that never fired: %v %v, want unchanged", ok, err)
	}
	alarms, err := e.Alarms(ctx)
	if err != nil || len(alarms) != 1 {
		t.Fatalf("alarms %+v, %v; want web's", alarms, err)
	}
	if a := alarms[0]; !a.Firing || !a.Since.Equal(t0) || !a.FiredAt.Equal(t0) || a.Value != 700 || a.Bound != 600 || a.Kind != health.OldestQueued || a.Subject != "web" {
		t.Errorf("alarm %+v, want web's, firing since t0 at 700 of 600", a)
	}
	resolve.Subject, resolve.Since, resolve.Value, resolve.Bound = "web", t0.Add(time.Hour), 3, 600
	if ok, err := e.SetAlarm(ctx, resolve, true); err != nil || !ok {
		t.Fatalf("resolve: %v %v, want changed", ok, err)
	}
	if ok, err := e.SetAlarm(ctx, resolve, true); err != nil || ok {
		t.Fatalf("resolve again: %v %v, want unchanged", ok, err)
	}
	alarms, _ = e.Alarms(ctx)
	if a := alarms[0]; a.Firing || !a.Since.Equal(t0.Add(time.Hour)) || !a.FiredAt.Equal(t0) || a.Value != 3 {
		t.Errorf("resolved alarm %+v, want resolved since t0+1h, fired at t0, value 3", a)
	}
	// Without notify, the state moves and nothing is queued.
	quiet := health.Alarm{Kind: health.Silence, Subject: "stripe", Firing: true, Since: t0, Value: 1, Bound: 1}
	if ok, err := e.SetAlarm(ctx, quiet, false); err != nil || !ok {
		t.Fatalf("fire without notice: %v %v", ok, err)
	}
	due, err := e.DueNotices(ctx, t0.Add(2*time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range due {
		if n.Kind == health.Silence {
			t.Errorf("notice %+v queued without notify", n)
		}
	}
}

func testHealthNotices(t *testing.T, e Engine) {
	ctx := context.Background()
	set := func(kind, subject string, firing bool, at time.Time, value float64) {
		t.Helper()
		ok, err := e.SetAlarm(ctx, health.Alarm{Kind: kind, Subject: subject, Firing: firing, Since: at, Value: value, Bound: 10}, true)
		if err != nil || !ok {
			t.Fatalf("set %s %s %v: %v %v", kind, subject, firing, ok, err)
		}
	}
	set(health.TargetFailing, "web", true, t0, 10)
	set(health.TargetFailing, "web", false, t0.Add(time.Minute), 0)
	set(health.TargetFailing, "mail", true, t0.Add(2*time.Minute), 12)

	if due, err := e.DueNotices(ctx, t0.Add(-time.Second), 10); err != nil || len(due) != 0 {
		t.Fatalf("due before any: %+v, %v", due, err)
	}
	due, err := e.DueNotices(ctx, t0.Add(time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	// web's resolved waits behind its firing.
	if len(due) != 2 || due[0].Subject != "web" || !due[0].Firing || due[1].Subject != "mail" || !due[1].Firing {
		t.Fatalf("due %+v, want web firing then mail firing", due)
	}
	if d := due[0]; d.Value != 10 || d.Bound != 10 || !d.FiredAt.Equal(t0) || !d.At.Equal(t0) || d.Tries != 0 || d.Kind != health.TargetFailing {
		t.Errorf("web's notice %+v, want 10 of 10, fired at t0, not tried", d)
	}
	// A failed send is due again later; meanwhile the resolved one waits.
	retry := t0.Add(2 * time.Hour)
	if err := e.RecordNotice(ctx, health.NoticeOutcome{ID: due[0].ID, Err: errors.New("status 500"), Next: retry, At: t0}); err != nil {
		t.Fatal(err)
	}
	if err := e.RecordNotice(ctx, health.NoticeOutcome{ID: due[1].ID, At: t0}); err != nil {
		t.Fatal(err)
	}
	if due, _ := e.DueNotices(ctx, t0.Add(time.Hour), 10); len(due) != 0 {
		t.Fatalf("due %+v before the retry, want none", due)
	}
	due, _ = e.DueNotices(ctx, retry, 10)
	if len(due) != 1 || due[0].Subject != "web" || !due[0].Firing || due[0].Tries != 1 {
		t.Fatalf("due at the retry %+v, want web's firing, tried once", due)
	}
	if err := e.RecordNotice(ctx, health.NoticeOutcome{ID: due[0].ID, At: retry}); err != nil {
		t.Fatal(err)
	}
	due, _ = e.DueNotices(ctx, retry, 10)
	if len(due) != 1 || due[0].Subject != "web" || due[0].Firing || !due[0].FiredAt.Equal(t0) || !due[0].At.Equal(t0.Add(time.Minute)) {
		t.Fatalf("due after the firing went %+v, want web's resolved (fired at t0, at t0+1m)", due)
	}
	if err := e.RecordNotice(ctx, health.NoticeOutcome{ID: due[0].ID, Err: errors.New("refused"), GaveUp: true, At: retry}); err != nil {
		t.Fatal(err)
	}
	if due, _ := e.DueNotices(ctx, retry.Add(24*time.Hour), 10); len(due) != 0 {
		t.Fatalf("due after every notice was sent or given up: %+v", due)
	}
}
