package sqlite_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/dedupe"
	"hookbox/queue"
	"hookbox/sqlite"
)

// BenchmarkIngest stores b.N new 1 KiB events through concurrent
// IngestEvent calls on a real database (synchronous=full), as the receiver's handlers
// do, so the group-commit writer batches them.
func BenchmarkIngest(b *testing.B) {
	for _, par := range []int{1, 32} {
		b.Run("goroutines="+strconv.Itoa(par*runtime.GOMAXPROCS(0)), func(b *testing.B) {
			db, err := sqlite.Open(filepath.Join(b.TempDir(), "hookbox.db"), benchOptions())
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			body := make([]byte, 1024)
			for i := range body {
				body[i] = 'a' + byte(i%26)
			}
			header := http.Header{"Content-Type": {"application/json"}, "X-Github-Event": {"push"}}
			var seq atomic.Int64
			now := time.Now()
			b.SetParallelism(par)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					id := "evt-" + strconv.FormatInt(seq.Add(1), 10)
					_, err := db.IngestEvent(ctx, &dedupe.Event{Source: "github", EventID: id, Type: "push",
						ReceivedAt: now, ContentType: "application/json", Headers: header, Body: body}, nil)
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			st := db.Stats()
			if st.Commits > 0 {
				b.ReportMetric(float64(st.Writes)/float64(st.Commits), "writes/commit")
			}
		})
	}
}

// BenchmarkClaimComplete claims a batch of 64 due deliveries and completes
// each as done, on a real database (synchronous=full). The completions are
// sent one after another (one worker) or all at once (64 workers, which the
// group-commit writer can batch).
func BenchmarkClaimComplete(b *testing.B) {
	const batch = 64
	for _, mode := range []string{"serial", "parallel"} {
		b.Run("complete="+mode, func(b *testing.B) {
			db := queuedStore(b, b.N*batch)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				now := time.Now()
				jobs, err := db.Claim(ctx, batch, time.Minute, now, nil)
				if err != nil {
					b.Fatal(err)
				}
				if len(jobs) != batch {
					b.Fatalf("claimed %d, want %d", len(jobs), batch)
				}
				complete := func(j *queue.Job) {
					f := queue.Finish{Attempt: queue.Attempt{Number: j.Attempt, StartedAt: now, Duration: time.Millisecond, Outcome: "ok", HTTPStatus: 200}}
					if err := db.Complete(ctx, j, f, now); err != nil {
						b.Error(err)
					}
				}
				if mode == "serial" {
					for _, j := range jobs {
						complete(j)
					}
					continue
				}
				var wg sync.WaitGroup
				for _, j := range jobs {
					wg.Go(func() { complete(j) })
				}
				wg.Wait()
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/delivery")
		})
	}
}

// queuedStore opens a store in a temp dir holding n events of 1 KiB, each
// with one pending delivery to "sink".
func queuedStore(b *testing.B, n int) *sqlite.DB {
	b.Helper()
	db, err := sqlite.Open(filepath.Join(b.TempDir(), "hookbox.db"), benchOptions())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	ctx := context.Background()
	body := make([]byte, 1024)
	past := time.Now().Add(-time.Minute)
	for done := 0; done < n; done += 5000 {
		var evs []*dedupe.Event
		for i := done; i < min(done+5000, n); i++ {
			evs = append(evs, &dedupe.Event{Source: "github", EventID: strconv.Itoa(i),
				ReceivedAt: past, ContentType: "application/json", Body: body})
		}
		if _, err := db.IngestEvents(ctx, evs, []string{"sink"}); err != nil {
			b.Fatal(err)
		}
	}
	return db
}

// BenchmarkRedelivery answers b.N duplicates of stored events through
// concurrent IngestEvent calls: each counts a redelivery and moves its
// event's last_seen_at.
func BenchmarkRedelivery(b *testing.B) {
	const stored = 10000
	db := queuedStore(b, stored)
	var seq atomic.Int64
	now := time.Now()
	body := make([]byte, 1024)
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			id := strconv.FormatInt(seq.Add(1)%stored, 10)
			res, err := db.IngestEvent(ctx, &dedupe.Event{Source: "github", EventID: id,
				ReceivedAt: now, ContentType: "application/json", Body: body}, []string{"sink"})
			if err != nil || !res.Duplicate {
				b.Errorf("redelivery of %s: %+v, %v", id, res, err)
				return
			}
		}
	})
}

// benchOptions opens the benchmarks' stores: synchronous=full, or the level
// in HOOKBOX_BENCH_SYNCHRONOUS ("off" leaves out the fsyncs, whose time on a
// shared disk hides what a statement or an index costs).
func benchOptions() sqlite.Options {
	return sqlite.Options{Synchronous: os.Getenv("HOOKBOX_BENCH_SYNCHRONOUS"), Logger: zerolog.Nop()}
}
