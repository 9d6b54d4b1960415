package sqlite_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/dedupe"
	"hookbox/sqlite"
)

// openMillionQueued opens a store in a temp dir holding 1,000,000
// waiting deliveries (five targets; pending and retrying), written
// straight in by SQL, as a backlog would leave them, in seconds instead of
// the minutes ingest would take.
func openMillionQueued(b *testing.B) *sqlite.DB {
	b.Helper()
	db, err := sqlite.Open(filepath.Join(b.TempDir(), "hookbox.db"), sqlite.Options{Logger: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	ctx := context.Background()
	now := time.Now().Add(-time.Hour).UnixMilli()
	if _, err := db.Exec(ctx, `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?)
		INSERT INTO events (id, source, event_id, received_at, body, body_size) SELECT i, 'github', 'e' || i, ?, x'7b7d', 2 FROM c`, queuedRows, now); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO deliveries (event, target, status, run_at, created_at)
		SELECT id, 'target-' || (id % 5), CASE WHEN id % 3 = 0 THEN 'retrying' ELSE 'pending' END, ? + id, ? + id FROM events`, now, now); err != nil {
		b.Fatal(err)
	}
	return db
}

const queuedRows = 1_000_000

// BenchmarkQueueByTarget is one metrics scrape's read of the store (the
// waiting deliveries by target and status, their oldest, the dead
// letters) with 1,000,000 deliveries waiting; and the admission budget's
// count of them.
func BenchmarkQueueByTarget(b *testing.B) {
	db := openMillionQueued(b)
	ctx := context.Background()
	b.Run("scrape", func(b *testing.B) {
		for b.Loop() {
			q, err := db.QueueByTarget(ctx)
			if err != nil {
				b.Fatal(err)
			}
			var n int64
			for _, s := range q {
				for _, c := range s.ByStatus {
					n += c
				}
			}
			if n != queuedRows {
				b.Fatalf("counted %d, want %d", n, queuedRows)
			}
		}
		b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/scrape")
	})
	b.Run("budget", func(b *testing.B) {
		for b.Loop() {
			if n, err := db.Waiting(ctx); err != nil || n != queuedRows {
				b.Fatalf("waiting %d (%v), want %d", n, err, queuedRows)
			}
		}
		b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/count")
	})
}

// BenchmarkIngestWhileScraping ingests (a delivery each) on the
// million-delivery store, on its own and while another goroutine scrapes it
// every 10 ms, a hundred times Prometheus's usual rate: the scrapes read on
// their own connections and never take the writer.
func BenchmarkIngestWhileScraping(b *testing.B) {
	db := openMillionQueued(b)
	body := make([]byte, 1024)
	header := http.Header{"Content-Type": {"application/json"}}
	var seq atomic.Int64
	seq.Store(int64(time.Now().UnixNano()))
	for _, scraping := range []bool{false, true} {
		name := "scrapes=none"
		if scraping {
			name = "scrapes=every-10ms"
		}
		b.Run(name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			var scrapes atomic.Int64
			var wg sync.WaitGroup
			if scraping {
				wg.Go(func() {
					ticker := time.NewTicker(10 * time.Millisecond)
					defer ticker.Stop()
					for {
						select {
						case <-ctx.Done():
							return
						case <-ticker.C:
						}
						if _, err := db.QueueByTarget(ctx); err == nil {
							scrapes.Add(1)
						}
					}
				})
			}
			var worst atomic.Int64
			b.SetParallelism(32)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := "ing-" + strconv.FormatInt(seq.Add(1), 10)
					start := time.Now()
					if _, err := db.IngestEvent(context.Background(), &dedupe.Event{Source: "github", EventID: id, Type: "push",
						ReceivedAt: start, ContentType: "application/json", Headers: header, Body: body}, []string{"target-0"}); err != nil {
						b.Error(err)
						return
					}
					if d := int64(time.Since(start)); d > worst.Load() {
						worst.Store(d)
					}
				}
			})
			b.StopTimer()
			cancel()
			wg.Wait()
			b.ReportMetric(float64(worst.Load())/1e6, "worst-ms")
			if scraping {
				b.ReportMetric(float64(scrapes.Load()), "scrapes")
			}
		})
	}
}
