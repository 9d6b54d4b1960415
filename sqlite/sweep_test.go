package sqlite

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// openWithTarget is mustOpen, and ingest stores a new event delivered to
// "web".
func openWithTarget(t *testing.T) (*DB, func(id string, at time.Time) int64) {
	t.Helper()
	db := mustOpen(t)
	return db, func(id string, at time.Time) int64 {
		t.Helper()
		ev := event(id)
		ev.ReceivedAt = at
		res, err := db.IngestEvent(context.Background(), ev, []string{"web"})
		if err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
}

// The engine-independent retention behaviours are in enginetest; these
// follow the SQLite sweep's windows of ids and its writes.

// The payload sweep goes through the store in windows of ids: every old
// finished event is swept once however the windows fall (gaps left by
// deleted events, dead ones kept), newer ones are not, and a second sweep
// finds nothing left.
func TestSweep_EveryWindow(t *testing.T) {
	db, ingest := openWithTarget(t)
	ctx := context.Background()
	now := t0.Add(100 * 24 * time.Hour)
	var ids []int64
	for i := range 300 {
		at := now.Add(-60 * 24 * time.Hour).Add(time.Duration(i) * time.Minute)
		if i >= 250 {
			at = now.Add(-time.Hour) // recent: kept
		}
		ids = append(ids, ingest(fmt.Sprintf("e%03d", i), at))
	}
	// Events 100–139 are gone (a gap of ids); 7 and 200 have dead deliveries.
	exec(t, db, `UPDATE deliveries SET status = 'done'`)
	exec(t, db, `DELETE FROM events WHERE id >= ? AND id < ?`, ids[100], ids[140])
	exec(t, db, `UPDATE deliveries SET status = 'dead' WHERE event = ? OR event = ?`, ids[7], ids[200])
	swept, _, err := db.Sweep(ctx, now.Add(-30*24*time.Hour), time.Time{}, 7)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(250 - 40 - 2); swept != want {
		t.Errorf("swept %d, want %d (every old finished event)", swept, want)
	}
	var left, recentSwept int
	if err := db.reader.QueryRow(`SELECT
		(SELECT count(*) FROM events WHERE swept_at IS NULL AND received_at < ?),
		(SELECT count(*) FROM events WHERE swept_at IS NOT NULL AND received_at >= ?)`,
		now.Add(-30*24*time.Hour).UnixMilli(), now.Add(-30*24*time.Hour).UnixMilli()).Scan(&left, &recentSwept); err != nil {
		t.Fatal(err)
	}
	if left != 2 || recentSwept != 0 {
		t.Errorf("after the sweep: %d old events keep their payload (want the 2 dead ones), %d recent ones lost it (want 0)", left, recentSwept)
	}
	if again, _, err := db.Sweep(ctx, now.Add(-30*24*time.Hour), time.Time{}, 7); err != nil || again != 0 {
		t.Errorf("second sweep: swept %d, err %v; want nothing left", again, err)
	}
}

// A sweep with nothing old enough, as on most runs of a young store, writes
// nothing: an idle hookbox commits nothing.
func TestSweep_NothingToDoWritesNothing(t *testing.T) {
	db, ingest := openWithTarget(t)
	ctx := context.Background()
	now := t0.Add(100 * 24 * time.Hour)
	for _, id := range []string{"a", "b"} {
		ingest(id, now.Add(-time.Hour))
	}
	before := db.Stats()
	swept, deleted, err := db.Sweep(ctx, now.Add(-30*24*time.Hour), now.Add(-90*24*time.Hour), 500)
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
	db, ingest := openWithTarget(t)
	ctx := context.Background()
	now := t0.Add(200 * 24 * time.Hour)
	var dead int64
	for i := range 1200 {
		at := now.Add(-60 * 24 * time.Hour) // past payloads, within dedupe
		if i == 0 {
			at = now.Add(-150 * 24 * time.Hour) // past dedupe too
		}
		if id := ingest(fmt.Sprintf("e%d", i), at); i == 0 {
			dead = id
		}
	}
	exec(t, db, `UPDATE deliveries SET status = CASE WHEN event = ? THEN 'dead' ELSE 'done' END`, dead)
	payloads, keys := now.Add(-30*24*time.Hour), now.Add(-90*24*time.Hour)
	if swept, _, err := db.Sweep(ctx, payloads, keys, 500); err != nil || swept != 1199 {
		t.Fatalf("first sweep: swept %d, %v; want the 1,199 finished payloads", swept, err)
	}
	before := db.Stats()
	swept, deleted, err := db.Sweep(ctx, payloads, keys, 500)
	if err != nil || swept != 0 || deleted != 0 {
		t.Fatalf("second sweep: swept %d, deleted %d, err %v; want nothing", swept, deleted, err)
	}
	if after := db.Stats(); after.Commits != before.Commits {
		t.Errorf("a sweep with nothing new committed %d times", after.Commits-before.Commits)
	}
}
