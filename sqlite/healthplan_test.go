package sqlite

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/dedupe"
	"hookbox/health"
	"hookbox/queue"
)

// TestQueueReadsScanNoTable: the reads of the health monitor, the metrics
// and the budget, which no index written with every delivery serves any
// more (migration 0011), still search the deliveries and the events by
// index or rowid and never scan either table whole: on a store of
// millions they stay a read of the queue or of a window.
func TestQueueReadsScanNoTable(t *testing.T) {
	db := mustOpen(t)
	for name, q := range map[string]string{
		"done count":      `SELECT count(*) ` + doneFrom,
		"done percentile": `SELECT ` + attemptEnd + ` - e.received_at AS l ` + strings.Replace(doneFrom, `WHERE`, `CROSS JOIN events e ON e.id = d.event WHERE`, 1) + ` ORDER BY l LIMIT 1 OFFSET ?`,
		"failure streaks": failureStreaksSQL,
		"queue by target": queueByTargetSQL,
		"waiting":         queueWaitingSQL,
	} {
		plan, err := queryPlan(db.reader, q)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%s: %q", name, plan)
		for _, line := range plan {
			// "SCAN deliveries USING INDEX deliveries_due" walks the queue;
			// a bare "SCAN deliveries" (or an alias) walks the table.
			if f := strings.Fields(line); len(f) == 2 && f[0] == "SCAN" && strings.Contains(" deliveries d events e attempts a ", " "+f[1]+" ") {
				t.Errorf("%s scans a table whole: %q in %q", name, line, plan)
			}
		}
	}
}

// TestDoneLatencyFromAttempts: the window searched by rowid among the
// attempts counts what a read of every attempt counts, for windows that
// start anywhere, with attempts appended a few seconds out of the order
// they ended in and with gaps where the retention sweep deleted some.
func TestDoneLatencyFromAttempts(t *testing.T) {
	db := mustOpen(t)
	ctx := context.Background()
	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		recv := t0.Add(time.Duration(i) * time.Second)
		if _, err := db.IngestEvent(ctx, &dedupe.Event{Source: "s", EventID: strconv.Itoa(i), ReceivedAt: recv, Body: []byte("{}")}, []string{"web", "mail"}); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := db.Claim(ctx, 800, time.Hour, time.Now(), nil)
	if err != nil || len(jobs) != 800 {
		t.Fatalf("claimed %d (%v)", len(jobs), err)
	}
	for i, j := range jobs {
		// Ends a second apart in claim order, give or take five.
		end := t0.Add(time.Duration(i)*time.Second + time.Duration(rng.IntN(10_000)-5_000)*time.Millisecond)
		f := queue.Finish{Attempt: queue.Attempt{Number: j.Attempt, StartedAt: end.Add(-300 * time.Millisecond), Duration: 300 * time.Millisecond, Outcome: "ok"}}
		if i%7 == 3 {
			f.Attempt.Outcome, f.Attempt.Error, f.Next = "failed", "boom", end.Add(time.Hour)
		}
		if err := db.Complete(ctx, j, f, end); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(ctx, `DELETE FROM attempts WHERE id % 13 = 0 OR id BETWEEN 200 AND 260`); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"web", "mail", "none"} {
		for _, since := range []time.Duration{-time.Hour, 0, 17 * time.Second, 250 * time.Second, 400 * time.Second, 799 * time.Second, time.Hour} {
			at := t0.Add(since)
			got, err := db.DoneLatency(ctx, target, at)
			if err != nil {
				t.Fatal(err)
			}
			var want []int64
			rows, err := db.reader.Query(`SELECT `+attemptEnd+` - e.received_at FROM attempts a JOIN deliveries d ON d.id = a.delivery
				JOIN events e ON e.id = d.event WHERE a.outcome = 'ok' AND d.target = ? AND `+attemptEnd+` >= ?`, target, at.UnixMilli())
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var l int64
				if err := rows.Scan(&l); err != nil {
					t.Fatal(err)
				}
				want = append(want, l)
			}
			rows.Close()
			slices.Sort(want)
			if got.Done != int64(len(want)) {
				t.Fatalf("%s since t0%+v: %d done, every attempt read gives %d", target, since, got.Done, len(want))
			}
			if len(want) == 0 {
				continue
			}
			p50 := time.Duration(max(want[health.Rank(got.Done, 0.5)], 0)) * time.Millisecond
			p99 := time.Duration(max(want[health.Rank(got.Done, 0.99)], 0)) * time.Millisecond
			if got.P50 != p50 || got.P99 != p99 {
				t.Fatalf("%s since t0%+v: p50 %v p99 %v, every attempt read gives %v %v", target, since, got.P50, got.P99, p50, p99)
			}
		}
	}
}

// TestLastSuccessAfterReopen: a target's last success, which the store
// keeps as deliveries complete, is read back from the table after a
// restart, so that failures before it still do not count.
func TestLastSuccessAfterReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookbox.db")
	db, err := Open(path, Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i := range 3 {
		if _, err := db.IngestEvent(ctx, &dedupe.Event{Source: "s", EventID: strconv.Itoa(i), ReceivedAt: t0, Body: []byte("{}")}, []string{"web"}); err != nil {
			t.Fatal(err)
		}
	}
	jobs, err := db.Claim(ctx, 3, time.Hour, time.Now(), nil)
	if err != nil || len(jobs) != 3 {
		t.Fatalf("claimed %d (%v)", len(jobs), err)
	}
	fail := func(db *DB, j *queue.Job, at time.Time) {
		t.Helper()
		f := queue.Finish{Attempt: queue.Attempt{Number: j.Attempt, StartedAt: at, Outcome: "failed", Error: "boom"}, Next: at.Add(time.Hour)}
		if err := db.Complete(ctx, j, f, at); err != nil {
			t.Fatal(err)
		}
	}
	fail(db, jobs[0], t0.Add(time.Second))
	if err := db.Complete(ctx, jobs[1], queue.Finish{Attempt: queue.Attempt{Number: 1, StartedAt: t0.Add(2 * time.Second), Outcome: "ok"}}, t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	fail(db, jobs[2], t0.Add(3*time.Second))
	streak := func(db *DB, want int, when string) {
		t.Helper()
		got, err := db.FailureStreaks(ctx, []string{"web", "mail"})
		if err != nil || got["web"] != want || got["mail"] != 0 {
			t.Fatalf("%s: %v (%v), want web %d", when, got, err, want)
		}
	}
	streak(db, 1, "before the restart")
	db.Close()
	db, err = Open(path, Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	streak(db, 1, "after the restart")
	// And kept from then on: a success now resets it.
	more, err := db.Claim(ctx, 3, time.Hour, time.Now().Add(3*time.Hour), nil)
	if err != nil || len(more) != 2 {
		t.Fatalf("claimed %d (%v)", len(more), err)
	}
	at := t0.Add(2 * time.Hour)
	if err := db.Complete(ctx, more[0], queue.Finish{Attempt: queue.Attempt{Number: more[0].Attempt, StartedAt: at, Outcome: "ok"}}, at); err != nil {
		t.Fatal(err)
	}
	streak(db, 0, "a success after the restart")
}
