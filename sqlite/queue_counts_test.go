package sqlite

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/dedupe"
	"hookbox/queue"
)

// waitingCondition is the waiting deliveries, paused ones included.
const waitingCondition = `(status = 'pending' OR status = 'retrying' OR status = 'running' OR status = 'paused')`

// countsFromTable counts the waiting deliveries by target and status from
// the table itself: what the metrics' read must always agree with.
func countsFromTable(t *testing.T, db *DB) map[string]int64 {
	t.Helper()
	rows, err := db.reader.Query(`SELECT target, status, count(*) FROM deliveries WHERE ` + waitingCondition + ` GROUP BY target, status`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var target, status string
		var n int64
		if err := rows.Scan(&target, &status, &n); err != nil {
			t.Fatal(err)
		}
		out[target+"/"+status] = n
	}
	return out
}

func countsKept(t *testing.T, db *DB) map[string]int64 {
	t.Helper()
	q, err := db.QueueByTarget(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for target, s := range q {
		for status, n := range s.ByStatus {
			if status != queue.Dead {
				out[target+"/"+status] = n
			}
		}
	}
	return out
}

func checkCounts(t *testing.T, db *DB, step string) {
	t.Helper()
	want, got := countsFromTable(t, db), countsKept(t, db)
	if fmt.Sprint(want) != fmt.Sprint(got) {
		t.Fatalf("after %s: the metrics read %v, the table %v", step, got, want)
	}
	var total int64
	for _, k := range slices.Sorted(maps.Keys(want)) {
		total += want[k]
	}
	if n, err := db.Waiting(context.Background()); err != nil || n != total {
		t.Fatalf("after %s: Waiting %d (%v), want %d", step, n, err, total)
	}
}

// TestQueueCounts: the counts the metrics read through the
// due and paused indexes agree with the table
// through every way a delivery comes, changes status and goes: ingest,
// claim, retry, done, dead, a redelivery reviving it, replay, unclaim,
// recovery after a crash, deletion by the retention sweep.
func TestQueueCounts(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "hookbox.db"), Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	checkCounts(t, db, "open")
	for i := range 30 {
		if _, err := db.IngestEvent(ctx, &dedupe.Event{Source: "s", EventID: strconv.Itoa(i), ReceivedAt: t0, Body: []byte("{}")}, []string{"a", "b"}); err != nil {
			t.Fatal(err)
		}
	}
	checkCounts(t, db, "ingest")
	jobs, err := db.Claim(ctx, 40, time.Minute, t0, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, db, "claim")
	for i, j := range jobs {
		f := queue.Finish{Attempt: queue.Attempt{Number: j.Attempt, StartedAt: t0, Outcome: "ok"}}
		switch i % 4 {
		case 1:
			f.Attempt.Outcome, f.Attempt.Error, f.Next = "failed", "boom", t0.Add(time.Minute)
		case 2:
			f.Attempt.Outcome, f.Attempt.Error, f.Dead = "failed", "boom", true
		case 3:
			continue // left running
		}
		if err := db.Complete(ctx, j, f, t0); err != nil {
			t.Fatal(err)
		}
	}
	checkCounts(t, db, "complete")
	if err := db.Unclaim(ctx, jobs[3:4], t0); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, db, "unclaim")
	if _, err := db.Recover(ctx, t0); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, db, "recover")
	// A redelivery of an event with a dead delivery revives it.
	if _, err := db.IngestEvent(ctx, &dedupe.Event{Source: "s", EventID: jobs[2].EventID, ReceivedAt: t0, Body: []byte("{}")}, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, db, "redelivery")
	if _, err := db.Replay(ctx, queue.ReplaySelector{DeadOnly: true}, t0); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, db, "replay --dead")
	if _, err := db.Replay(ctx, queue.ReplaySelector{Since: t0.Add(-time.Minute), Target: "a"}, t0); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, db, "replay --since")
	// Events deleted with their deliveries (the foreign key's cascade).
	if _, err := db.Exec(ctx, `DELETE FROM events WHERE id % 3 = 0`); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, db, "delete events")
	// Everything done: no count left but zeros.
	for {
		jobs, err := db.Claim(ctx, 100, time.Minute, t0.Add(time.Hour), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) == 0 {
			break
		}
		for _, j := range jobs {
			if err := db.Complete(ctx, j, queue.Finish{Attempt: queue.Attempt{Number: j.Attempt, StartedAt: t0, Outcome: "ok"}}, t0); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkCounts(t, db, "all done")
	if n, _ := db.Waiting(ctx); n != 0 {
		t.Errorf("waiting %d once all is done, want 0", n)
	}
}
