package queue_test

import (
	"context"
	"database/sql"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/dedupe"
	"hookbox/queue"
)

// BenchmarkClaimComplete claims a batch of 64 due deliveries and completes
// each as done, on a real database (synchronous=full). The completions are
// sent one after another (one worker) or all at once (64 workers, which the
// group-commit writer can batch).
func BenchmarkClaimComplete(b *testing.B) {
	const batch = 64
	for _, mode := range []string{"serial", "parallel"} {
		b.Run("complete="+mode, func(b *testing.B) {
			q := queuedStore(b, b.N*batch)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				now := time.Now()
				jobs, err := q.Claim(ctx, batch, time.Minute, now)
				if err != nil {
					b.Fatal(err)
				}
				if len(jobs) != batch {
					b.Fatalf("claimed %d, want %d", len(jobs), batch)
				}
				complete := func(j *queue.Job) {
					f := queue.Finish{Attempt: queue.Attempt{Number: j.Attempt, StartedAt: now, Duration: time.Millisecond, Outcome: "ok", HTTPStatus: 200}}
					if err := q.Complete(ctx, j, f, now); err != nil {
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

// BenchmarkPool_Drain drains b.N queued deliveries through a pool of 16
// workers whose target succeeds at once: the pool's own cost a delivery
// (claim, lease, result, commit), without any transport.
func BenchmarkPool_Drain(b *testing.B) {
	q := queuedStore(b, b.N)
	ctx := context.Background()
	var mu sync.Mutex
	left := b.N
	finished := make(chan struct{})
	p := queue.NewPool(q, queue.PoolConfig{
		Workers: 16, MaxAttempts: 1, Lease: time.Minute, Grace: time.Second,
		Targets: []queue.Target{{Name: "sink", Handler: queue.HandlerFunc(func(context.Context, *queue.Job) queue.Outcome {
			return queue.Outcome{HTTPStatus: 200}
		})}},
		OnDone: func(time.Time) {
			mu.Lock()
			if left--; left == 0 {
				close(finished)
			}
			mu.Unlock()
		},
		Logger: zerolog.Nop(),
	})
	b.ReportAllocs()
	b.ResetTimer()
	if err := p.Start(ctx); err != nil {
		b.Fatal(err)
	}
	select {
	case <-finished:
	case <-time.After(time.Minute + time.Duration(b.N)*time.Millisecond):
		mu.Lock()
		defer mu.Unlock()
		b.Fatalf("%d of %d deliveries not done", left, b.N)
	}
	b.StopTimer()
	p.Stop()
}

// queuedStore opens a store in a temp dir holding n events of 1 KiB, each
// with one pending delivery to "sink", and returns its queue.
func queuedStore(b *testing.B, n int) *queue.Queue {
	b.Helper()
	db, q, events := mustOpenDB(b, "sink")
	ctx := context.Background()
	body := make([]byte, 1024)
	past := time.Now().Add(-time.Minute)
	for done := 0; done < n; done += 5000 {
		err := db.Write(ctx, func(tx *sql.Tx) error {
			for i := done; i < min(done+5000, n); i++ {
				if _, err := events.IngestTx(ctx, tx, &dedupe.Event{Source: "github", EventID: strconv.Itoa(i),
					ReceivedAt: past, ContentType: "application/json", Body: body}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return q
}
