package enginetest

import (
	"context"
	"testing"
	"time"

	"hookbox/queue"
)

var retentionTests = []test{
	{"Keeps what is needed", testSweepKeepsWhatIsNeeded},
	{"Event numbers are not reused", testSweepEventNumbersAreNotReused},
	{"Nothing old enough", testSweepNothingOldEnough},
}

func testSweepKeepsWhatIsNeeded(t *testing.T, e Engine) {
	ctx := context.Background()
	now := t0.Add(100 * 24 * time.Hour)
	// store ingests an event received at at, delivered to web, and takes
	// its delivery to status.
	store := func(id string, at time.Time, status string) int64 {
		t.Helper()
		ev := ingest(t, e, id, at, "web")
		j := claimOne(t, e, now)
		switch status {
		case queue.Done:
			complete(t, e, j, finishOK(j, now), now)
		case queue.Dead:
			complete(t, e, j, finishDead(j, now, "boom", "", false), now)
		case queue.Retrying:
			complete(t, e, j, finishFailed(j, now, now.Add(time.Hour), "boom"), now)
		}
		return ev
	}
	recentDone := store("recent_done", now.Add(-24*time.Hour), queue.Done)
	oldDone := store("old_done", now.Add(-40*24*time.Hour), queue.Done)
	oldDead := store("old_dead", now.Add(-40*24*time.Hour), queue.Dead)
	ancientDone := store("ancient_done", now.Add(-100*24*time.Hour), queue.Done)
	ancientDead := store("ancient_dead", now.Add(-100*24*time.Hour), queue.Dead)
	ancientQueued := store("ancient_queued", now.Add(-100*24*time.Hour), queue.Retrying) // newest: kept anyway

	swept, deleted, err := e.Sweep(ctx, now.Add(-30*24*time.Hour), now.Add(-90*24*time.Hour), 2)
	if err != nil {
		t.Fatal(err)
	}
	// old_done and ancient_done lose their payload (ancient_done then goes
	// altogether); old_dead, ancient_queued and ancient_dead keep theirs.
	if swept != 2 || deleted != 1 {
		t.Fatalf("swept=%d deleted=%d, want 2 and 1", swept, deleted)
	}
	for _, c := range []struct {
		row       int64
		wantBody  bool
		wantSwept bool
	}{
		{recentDone, true, false},
		{oldDone, false, true},
		{oldDead, true, false},
		{ancientQueued, true, false},
		{ancientDead, true, false}, // a dead letter is kept, payload and all, until handled
	} {
		ev, err := e.GetEvent(ctx, c.row)
		if err != nil {
			t.Fatalf("event %d: %v", c.row, err)
		}
		if (ev.Body != nil) != c.wantBody || ev.Swept != c.wantSwept {
			t.Errorf("event %s: body kept=%v swept=%v, want %v %v", ev.EventID, ev.Body != nil, ev.Swept, c.wantBody, c.wantSwept)
		}
		if c.wantSwept && (ev.Headers != nil || ev.BodySize == 0) {
			t.Errorf("swept event %s: headers %v, body size %d; want the headers gone and the size kept", ev.EventID, ev.Headers, ev.BodySize)
		}
	}
	if _, err := e.GetEvent(ctx, ancientDone); err == nil {
		t.Error("ancient_done still stored, want its dedupe key gone after the dedupe period")
	}

	// A swept event still dedupes; a forgotten one is new again.
	if res, err := e.IngestEvent(ctx, event("old_done"), []string{"web"}); err != nil || !res.Duplicate {
		t.Errorf("resend of a swept event: duplicate=%v err=%v, want duplicate", res.Duplicate, err)
	}
	if res, err := e.IngestEvent(ctx, event("ancient_done"), []string{"web"}); err != nil || res.Duplicate {
		t.Errorf("resend of a forgotten event: duplicate=%v err=%v, want new", res.Duplicate, err)
	}
}

// Event numbers are never handed out twice: the sweep keeps the newest row,
// so an event that arrives after everything was forgotten gets a number no
// earlier event had (dead letters and alerts name events by number).
func testSweepEventNumbersAreNotReused(t *testing.T, e Engine) {
	ctx := context.Background()
	now := t0.Add(100 * 24 * time.Hour)
	var last int64
	for _, id := range []string{"a", "b", "c"} {
		last = ingest(t, e, id, now.Add(-95*24*time.Hour))
	}
	swept, deleted, err := e.Sweep(ctx, now.Add(-30*24*time.Hour), now.Add(-90*24*time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	if swept != 3 || deleted != 2 {
		t.Fatalf("swept=%d deleted=%d, want every payload gone and every key but the newest", swept, deleted)
	}
	res, err := e.IngestEvent(ctx, event("d"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.ID <= last {
		t.Fatalf("event after the sweep got number %d, want more than %d (the last number handed out)", res.ID, last)
	}
	// The kept key still dedupes; its payload is gone like the others'.
	if res, err := e.IngestEvent(ctx, event("c"), nil); err != nil || !res.Duplicate {
		t.Errorf("resend of the newest swept event: duplicate=%v err=%v, want duplicate", res.Duplicate, err)
	}
}

// A sweep with nothing old enough changes nothing.
func testSweepNothingOldEnough(t *testing.T, e Engine) {
	ctx := context.Background()
	now := t0.Add(100 * 24 * time.Hour)
	a := ingest(t, e, "a", now.Add(-time.Hour), "web")
	ingest(t, e, "b", now.Add(-time.Hour))
	swept, deleted, err := e.Sweep(ctx, now.Add(-30*24*time.Hour), now.Add(-90*24*time.Hour), 500)
	if err != nil || swept != 0 || deleted != 0 {
		t.Fatalf("sweep: swept %d, deleted %d, err %v; want nothing to do", swept, deleted, err)
	}
	if ev, err := e.GetEvent(ctx, a); err != nil || ev.Swept || ev.Body == nil {
		t.Errorf("event a after the sweep: %+v, %v; want it whole", ev, err)
	}
}
