package dedupe_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"hookbox/dedupe"
	"hookbox/queue"
	"hookbox/store"
)

// openWithTarget is MustOpen whose new events get a delivery to "web".
func openWithTarget(t *testing.T) (*dedupe.Store, *store.DB) {
	t.Helper()
	s, db := MustOpen(t)
	q := queue.New(db)
	s.OnNew = func(tx *sql.Tx, ev *dedupe.Event) error {
		return q.EnqueueTx(context.Background(), tx, ev.ID, []string{"web"}, ev.ReceivedAt)
	}
	return s, db
}

func TestSweep_RetentionKeepsWhatIsNeeded(t *testing.T) {
	s, db := openWithTarget(t)
	ctx := context.Background()
	now := t0.Add(100 * 24 * time.Hour)
	ingest := func(id string, at time.Time, status string) int64 {
		t.Helper()
		ev := event(id)
		ev.ReceivedAt = at
		res, err := s.Ingest(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Write(ctx, func(tx *sql.Tx) error {
			_, err := tx.Exec(`UPDATE deliveries SET status = ? WHERE event = ?`, status, res.ID)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	recentDone := ingest("recent_done", now.Add(-24*time.Hour), queue.Done)
	oldDone := ingest("old_done", now.Add(-40*24*time.Hour), queue.Done)
	oldDead := ingest("old_dead", now.Add(-40*24*time.Hour), queue.Dead)
	ancientDone := ingest("ancient_done", now.Add(-100*24*time.Hour), queue.Done)
	ancientDead := ingest("ancient_dead", now.Add(-100*24*time.Hour), queue.Dead)
	ancientQueued := ingest("ancient_queued", now.Add(-100*24*time.Hour), queue.Retrying) // newest: kept anyway

	swept, deleted, err := s.Sweep(ctx, now.Add(-30*24*time.Hour), now.Add(-90*24*time.Hour), 2)
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
		e, err := s.Get(ctx, c.row)
		if err != nil {
			t.Fatalf("event %d: %v", c.row, err)
		}
		if (e.Body != nil) != c.wantBody || e.Swept != c.wantSwept {
			t.Errorf("event %s: body kept=%v swept=%v, want %v %v", e.EventID, e.Body != nil, e.Swept, c.wantBody, c.wantSwept)
		}
	}
	if _, err := s.Get(ctx, ancientDone); err == nil {
		t.Error("ancient_done still stored, want its dedupe key gone after the dedupe period")
	}

	// A swept event still dedupes; a forgotten one is new again.
	if res, err := s.Ingest(ctx, event("old_done")); err != nil || !res.Duplicate {
		t.Errorf("resend of a swept event: duplicate=%v err=%v, want duplicate", res.Duplicate, err)
	}
	if res, err := s.Ingest(ctx, event("ancient_done")); err != nil || res.Duplicate {
		t.Errorf("resend of a forgotten event: duplicate=%v err=%v, want new", res.Duplicate, err)
	}
}

// Event numbers are never handed out twice: the sweep keeps the newest row,
// so an event that arrives after everything was forgotten gets a number no
// earlier event had (dead letters and alerts name events by number).
func TestSweep_EventNumbersAreNotReused(t *testing.T) {
	s, _ := MustOpen(t)
	ctx := context.Background()
	now := t0.Add(100 * 24 * time.Hour)
	var last int64
	for _, id := range []string{"a", "b", "c"} {
		ev := event(id)
		ev.ReceivedAt = now.Add(-95 * 24 * time.Hour)
		res, err := s.Ingest(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		last = res.ID
	}
	swept, deleted, err := s.Sweep(ctx, now.Add(-30*24*time.Hour), now.Add(-90*24*time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	if swept != 3 || deleted != 2 {
		t.Fatalf("swept=%d deleted=%d, want every payload gone and every key but the newest", swept, deleted)
	}
	res, err := s.Ingest(ctx, event("d"))
	if err != nil {
		t.Fatal(err)
	}
	if res.ID <= last {
		t.Fatalf("event after the sweep got number %d, want more than %d (the last number handed out)", res.ID, last)
	}
	// The kept key still dedupes; its payload is gone like the others'.
	if res, err := s.Ingest(ctx, event("c")); err != nil || !res.Duplicate {
		t.Errorf("resend of the newest swept event: duplicate=%v err=%v, want duplicate", res.Duplicate, err)
	}
}

// The payload sweep goes through the store in windows of ids: every old
// finished event is swept once however the windows fall (gaps left by
// deleted events, dead ones kept), newer ones are not, and a second sweep
// finds nothing left.
func TestSweep_EveryWindow(t *testing.T) {
	s, db := openWithTarget(t)
	ctx := context.Background()
	now := t0.Add(100 * 24 * time.Hour)
	var ids []int64
	for i := range 300 {
		ev := event(fmt.Sprintf("e%03d", i))
		ev.ReceivedAt = now.Add(-60 * 24 * time.Hour).Add(time.Duration(i) * time.Minute)
		if i >= 250 {
			ev.ReceivedAt = now.Add(-time.Hour) // recent: kept
		}
		res, err := s.Ingest(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ID)
	}
	if err := db.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`UPDATE deliveries SET status = 'done'`); err != nil {
			return err
		}
		// Events 100–139 are gone (a gap of ids); 7 and 200 have dead deliveries.
		if _, err := tx.Exec(`DELETE FROM events WHERE id >= ? AND id < ?`, ids[100], ids[140]); err != nil {
			return err
		}
		_, err := tx.Exec(`UPDATE deliveries SET status = 'dead' WHERE event = ? OR event = ?`, ids[7], ids[200])
		return err
	}); err != nil {
		t.Fatal(err)
	}
	swept, _, err := s.Sweep(ctx, now.Add(-30*24*time.Hour), time.Time{}, 7)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(250 - 40 - 2); swept != want {
		t.Errorf("swept %d, want %d (every old finished event)", swept, want)
	}
	var left, recentSwept int
	if err := db.Reader().QueryRow(`SELECT
		(SELECT count(*) FROM events WHERE swept_at IS NULL AND received_at < ?),
		(SELECT count(*) FROM events WHERE swept_at IS NOT NULL AND received_at >= ?)`,
		now.Add(-30*24*time.Hour).UnixMilli(), now.Add(-30*24*time.Hour).UnixMilli()).Scan(&left, &recentSwept); err != nil {
		t.Fatal(err)
	}
	if left != 2 || recentSwept != 0 {
		t.Errorf("after the sweep: %d old events keep their payload (want the 2 dead ones), %d recent ones lost it (want 0)", left, recentSwept)
	}
	if again, _, err := s.Sweep(ctx, now.Add(-30*24*time.Hour), time.Time{}, 7); err != nil || again != 0 {
		t.Errorf("second sweep: swept %d, err %v; want nothing left", again, err)
	}
}

// A sweep with nothing old enough, as on most runs of a young store, writes
// nothing: an idle hookbox commits nothing.
func TestSweep_NothingToDoWritesNothing(t *testing.T) {
	s, db := openWithTarget(t)
	ctx := context.Background()
	now := t0.Add(100 * 24 * time.Hour)
	for _, id := range []string{"a", "b"} {
		ev := event(id)
		ev.ReceivedAt = now.Add(-time.Hour)
		if _, err := s.Ingest(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	before := db.Stats()
	swept, deleted, err := s.Sweep(ctx, now.Add(-30*24*time.Hour), now.Add(-90*24*time.Hour), 500)
	if err != nil || swept != 0 || deleted != 0 {
		t.Fatalf("sweep: swept %d, deleted %d, err %v; want nothing to do", swept, deleted, err)
	}
	if after := db.Stats(); after.Commits != before.Commits || after.Writes != before.Writes {
		t.Errorf("a sweep with nothing to do wrote: commits %d → %d, writes %d → %d", before.Commits, after.Commits, before.Writes, after.Writes)
	}
}

// In a store's steady state (old payloads already swept, their keys kept;
// an old dead letter kept until handled) a sweep finds nothing new to do
// and writes nothing either.
func TestSweep_SteadyStateWritesNothing(t *testing.T) {
	s, db := openWithTarget(t)
	ctx := context.Background()
	now := t0.Add(200 * 24 * time.Hour)
	var dead int64
	for i := range 1200 {
		ev := event(fmt.Sprintf("e%d", i))
		ev.ReceivedAt = now.Add(-60 * 24 * time.Hour) // past payloads, within dedupe
		if i == 0 {
			ev.ReceivedAt = now.Add(-150 * 24 * time.Hour) // past dedupe too
		}
		res, err := s.Ingest(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			dead = res.ID
		}
	}
	if err := db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE deliveries SET status = CASE WHEN event = ? THEN 'dead' ELSE 'done' END`, dead)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	payloads, keys := now.Add(-30*24*time.Hour), now.Add(-90*24*time.Hour)
	if swept, _, err := s.Sweep(ctx, payloads, keys, 500); err != nil || swept != 1199 {
		t.Fatalf("first sweep: swept %d, %v; want the 1,199 finished payloads", swept, err)
	}
	before := db.Stats()
	swept, deleted, err := s.Sweep(ctx, payloads, keys, 500)
	if err != nil || swept != 0 || deleted != 0 {
		t.Fatalf("second sweep: swept %d, deleted %d, err %v; want nothing", swept, deleted, err)
	}
	if after := db.Stats(); after.Commits != before.Commits {
		t.Errorf("a sweep with nothing new committed %d times", after.Commits-before.Commits)
	}
}
