package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/dedupe"
	"hookbox/queue"
)

// mustOpen opens a store on a fresh database in a temp dir, closed when
// the test ends.
func mustOpen(tb testing.TB) *DB {
	tb.Helper()
	db, err := Open(filepath.Join(tb.TempDir(), "hookbox.db"), Options{Logger: zerolog.Nop()})
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func event(id string) *dedupe.Event {
	return &dedupe.Event{
		Source:      "stripe",
		EventID:     id,
		Type:        "invoice.paid",
		ReceivedAt:  t0,
		ContentType: "application/json",
		Headers:     http.Header{"Stripe-Signature": {"t=1,v1=00"}},
		Body:        []byte(`{"id":"` + id + `"}`),
	}
}

func mustList(tb testing.TB, db *DB) []dedupe.Stored {
	tb.Helper()
	list, err := db.ListEvents(context.Background(), dedupe.Filter{})
	if err != nil {
		tb.Fatal(err)
	}
	return list
}

// exec runs statements on the writer.
func exec(tb testing.TB, db *DB, query string, args ...any) {
	tb.Helper()
	if _, err := db.Exec(context.Background(), query, args...); err != nil {
		tb.Fatal(err)
	}
}

// The engine-independent ingest behaviours are in enginetest; these need
// the SQLite writer's batches, or a trigger to make a write fail.
func TestIngest_FailureInsideTransaction(t *testing.T) {
	db := mustOpen(t)
	ctx := context.Background()
	boom := errors.New("enqueue failed")

	t.Run("Redelivery failure rolls back the redelivery count", func(t *testing.T) {
		res, err := db.IngestEvent(ctx, event("evt_fail"), []string{"web"})
		if err != nil {
			t.Fatal(err)
		}
		jobs, err := db.Claim(ctx, 1, time.Minute, t0, nil)
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim: %d jobs, %v", len(jobs), err)
		}
		f := queue.Finish{Attempt: queue.Attempt{Number: 1, StartedAt: t0, Outcome: "failed", Error: "boom"}, Dead: true}
		if err := db.Complete(ctx, jobs[0], f, t0); err != nil {
			t.Fatal(err)
		}
		// The revival of its dead delivery fails, after the redelivery
		// was counted.
		exec(t, db, `CREATE TRIGGER refuse_revive BEFORE UPDATE OF status ON deliveries WHEN NEW.status = 'pending'
			BEGIN SELECT RAISE(ABORT, 'enqueue failed'); END`)
		_, err = db.IngestEvent(ctx, event("evt_fail"), nil)
		if err == nil || !strings.Contains(err.Error(), boom.Error()) || !strings.Contains(err.Error(), fmt.Sprintf("revive event %d", res.ID)) {
			t.Fatalf("IngestEvent err=%v, want the revival's error", err)
		}
		exec(t, db, `DROP TRIGGER refuse_revive`)
		if list := mustList(t, db); len(list) != 1 || list[0].Redeliveries != 0 {
			t.Fatalf("stored %+v, want no redelivery counted", list)
		}
		if d, err := db.Deliveries(ctx, []int64{res.ID}); err != nil || d[res.ID][0].Status != queue.Dead {
			t.Fatalf("delivery %+v (%v), want still dead", d, err)
		}
	})

	t.Run("One failure in a batch", func(t *testing.T) {
		// Failing events are those whose id starts with "bad": the same
		// target twice, a delivery that cannot be written. Each ingest
		// records the commit count it ran under: equal counts mean one
		// batch.
		var mu sync.Mutex
		batchOf := map[string]int64{}
		ingest := func(ev *dedupe.Event) error {
			targets := []string{"web"}
			if strings.HasPrefix(ev.EventID, "bad") {
				targets = []string{"web", "web"}
			}
			headers, err := json.Marshal(ev.Headers)
			if err != nil {
				return err
			}
			return db.w.write(ctx, func(tx *sql.Tx) error {
				mu.Lock()
				batchOf[ev.EventID] = db.Stats().Commits
				mu.Unlock()
				_, err := db.ingestTx(context.WithoutCancel(ctx), tx, ev, headers, targets)
				return err
			})
		}
		for round := 0; ; round++ {
			if round == 50 {
				t.Fatal("no batch held both a failing and a succeeding ingest in 50 rounds")
			}
			const n = 30
			ids := make([]string, n)
			errs := make([]error, n)
			for i := range ids {
				ids[i] = fmt.Sprintf("ok-%d-%d", round, i)
				if i%4 == 0 {
					ids[i] = fmt.Sprintf("bad-%d-%d", round, i)
				}
			}
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					errs[i] = ingest(event(ids[i]))
				}()
			}
			close(start)
			wg.Wait()

			stored := map[string]bool{}
			for _, e := range mustList(t, db) {
				stored[e.EventID] = true
			}
			type tally struct{ bad, ok int }
			batches := map[int64]tally{}
			for i, id := range ids {
				bad := strings.HasPrefix(id, "bad")
				tl := batches[batchOf[id]]
				if bad {
					tl.bad++
					if errs[i] == nil || !strings.Contains(errs[i].Error(), "UNIQUE") || stored[id] {
						t.Fatalf("%s: err=%v stored=%v, want the error and nothing stored", id, errs[i], stored[id])
					}
				} else {
					tl.ok++
					if errs[i] != nil || !stored[id] {
						t.Fatalf("%s: err=%v stored=%v, want committed", id, errs[i], stored[id])
					}
				}
				batches[batchOf[id]] = tl
			}
			for _, tl := range batches {
				if tl.bad > 0 && tl.ok > 0 {
					return
				}
			}
		}
	})
}
