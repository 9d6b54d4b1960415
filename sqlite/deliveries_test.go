package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"hookbox/dedupe"
	"hookbox/queue"
)

// The engine-independent behaviours of the deliveries are in enginetest;
// these follow the SQLite writer's batches and Replay's reads and writes.

// mustIngest stores a new event delivered to sink and returns its row id.
func mustIngest(tb testing.TB, db *DB, id string, at time.Time) int64 {
	tb.Helper()
	res, err := db.IngestEvent(context.Background(), &dedupe.Event{
		Source: "shop", EventID: id, Type: "order.created", ReceivedAt: at, ContentType: "application/json", Body: []byte(`{}`),
	}, []string{"sink"})
	if err != nil {
		tb.Fatal(err)
	}
	return res.ID
}

func mustDelivery(tb testing.TB, db *DB, event int64) queue.Delivery {
	tb.Helper()
	m, err := db.Deliveries(context.Background(), []int64{event})
	if err != nil {
		tb.Fatal(err)
	}
	if len(m[event]) != 1 {
		tb.Fatalf("event %d has %d deliveries, want 1", event, len(m[event]))
	}
	return m[event][0]
}

// deadWithAlert stores one event whose delivery went dead with its alert due.
func deadWithAlert(t *testing.T) *DB {
	t.Helper()
	db := mustOpen(t)
	ctx := context.Background()
	now := time.Now()
	mustIngest(t, db, "evt_dead", now.Add(-time.Minute))
	jobs, err := db.Claim(ctx, 1, time.Minute, now, nil)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	f := queue.Finish{Attempt: queue.Attempt{Number: 1, StartedAt: now, Outcome: "failed", Error: "boom"}, Dead: true, AlertDue: true}
	if err := db.Complete(ctx, jobs[0], f, now); err != nil {
		t.Fatal(err)
	}
	return db
}

// A claim and a completion that share a group commit with a failing write
// run again when the batch is redone write by write; what they report must
// be what the second run did, not both runs.
func TestClaim_RedoneBatchReportsOnce(t *testing.T) {
	db := mustOpen(t)
	ctx := context.Background()
	now := time.Now()
	var ids []int64
	for i := range 3 {
		ids = append(ids, mustIngest(t, db, fmt.Sprintf("evt_%d", i), now.Add(-time.Minute)))
	}
	// Hold the writer so that the next writes queue up into one batch.
	hold, held := make(chan struct{}), make(chan struct{})
	go db.w.write(ctx, func(*sql.Tx) error { close(held); <-hold; return nil })
	<-held
	type claimed struct {
		jobs []*queue.Job
		err  error
	}
	claims := make(chan claimed, 1)
	go func() {
		jobs, err := db.Claim(ctx, 10, time.Minute, now, nil)
		claims <- claimed{jobs, err}
	}()
	failed := make(chan error, 1)
	go func() {
		failed <- db.w.write(ctx, func(tx *sql.Tx) error {
			_, err := tx.Exec(`INSERT INTO deliveries (event, target, status, run_at, created_at) VALUES (?, 'x', 'bogus', 0, 0)`, ids[0])
			return err
		})
	}()
	time.Sleep(50 * time.Millisecond) // both queued behind the held write
	close(hold)
	c := <-claims
	if err := <-failed; err == nil {
		t.Fatal("the bogus write succeeded; the batch was not redone")
	}
	if c.err != nil {
		t.Fatal(c.err)
	}
	if len(c.jobs) != len(ids) {
		t.Fatalf("claim returned %d jobs, want %d (one per delivery)", len(c.jobs), len(ids))
	}
	for _, j := range c.jobs {
		// The token handed out is the one stored: completing with it works.
		f := queue.Finish{Attempt: queue.Attempt{Number: j.Attempt, StartedAt: now, Outcome: "ok"}}
		if err := db.Complete(ctx, j, f, now); err != nil {
			t.Errorf("delivery %d: complete with the claimed token: %v", j.Delivery, err)
		}
		if d := mustDelivery(t, db, j.Event); d.Status != queue.Done || d.Attempts != 1 {
			t.Errorf("delivery %d: %s after %d attempts, want done after 1", j.Delivery, d.Status, d.Attempts)
		}
	}
}

// A replay bigger than one write queues every selected delivery again, in
// several short writes (a running serve's writer waits for each, never for
// the whole replay).
func TestReplay_ManyInBatches(t *testing.T) {
	db := mustOpen(t)
	ctx := context.Background()
	now := time.Now()
	const n = 1201 // over two batches of 500 and a remainder
	var evs []*dedupe.Event
	for i := range n {
		evs = append(evs, &dedupe.Event{Source: "shop", EventID: fmt.Sprintf("e%d", i), ReceivedAt: now.Add(-time.Minute), Body: []byte(`{}`)})
	}
	if _, err := db.IngestEvents(ctx, evs, []string{"sink"}); err != nil {
		t.Fatal(err)
	}
	exec(t, db, `UPDATE deliveries SET status = 'done', attempts = 1, done_at = 1`)
	before := db.Stats().Commits
	r, err := db.Replay(ctx, queue.ReplaySelector{Since: now.Add(-time.Hour)}, now)
	if err != nil {
		t.Fatal(err)
	}
	if r.Queued != n {
		t.Errorf("replay queued %d, want %d", r.Queued, n)
	}
	if commits := db.Stats().Commits - before; commits < 3 {
		t.Errorf("replay of %d deliveries took %d commit(s), want one a batch of 500 (3)", n, commits)
	}
	var pending int
	if err := db.reader.QueryRow(`SELECT count(*) FROM deliveries WHERE status = 'pending' AND attempts = 0`).Scan(&pending); err != nil || pending != n {
		t.Errorf("%d deliveries pending with attempts reset (err %v), want %d", pending, err, n)
	}
}

// Replay reads its selection, then writes: what changes in between (a
// running serve claims a delivery, or revives a dead one and finishes it)
// is left as it is and counted, never queued again to run a second time.
func TestReplay_ChecksAgainWhenItWrites(t *testing.T) {
	for _, c := range []struct {
		name   string
		sel    queue.ReplaySelector
		meant  string // what the serve does between the read and the write
		status string // the delivery's status after the replay
	}{
		{"Dead delivery revived and done", queue.ReplaySelector{DeadOnly: true},
			`UPDATE deliveries SET status = 'done', attempts = 1, done_at = 1`, "done"},
		{"Delivery claimed", queue.ReplaySelector{Since: time.Now().Add(-time.Hour)},
			`UPDATE deliveries SET status = 'running', attempts = 1, lease_token = 7`, "running"},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := deadWithAlert(t)
			ctx := context.Background()
			// Hold the writer: the replay's read goes ahead, its write waits.
			taken, release, held := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			go func() {
				held <- db.w.write(ctx, func(tx *sql.Tx) error {
					close(taken)
					<-release
					_, err := tx.Exec(c.meant)
					return err
				})
			}()
			<-taken
			done := make(chan queue.Replayed, 1)
			go func() {
				r, err := db.Replay(ctx, c.sel, time.Now())
				if err != nil {
					t.Error(err)
				}
				done <- r
			}()
			time.Sleep(500 * time.Millisecond) // the read is done (milliseconds); the write waits for the writer
			close(release)
			if err := <-held; err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.Queued != 0 || r.Changed != 1 {
				t.Errorf("replay = %+v, want nothing queued and the delivery counted as changed", r)
			}
			var status string
			if err := db.reader.QueryRow(`SELECT status FROM deliveries`).Scan(&status); err != nil || status != c.status {
				t.Errorf("delivery now %q (err %v), want %q: left as the serve made it", status, err, c.status)
			}
		})
	}
}
