package queue_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/dedupe"
	"hookbox/queue"
)

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
		OnDone: func(string, time.Time) {
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
// with one pending delivery to "sink".
func queuedStore(b *testing.B, n int) *store {
	b.Helper()
	q := MustOpen(b, "sink")
	ctx := context.Background()
	body := make([]byte, 1024)
	past := time.Now().Add(-time.Minute)
	for done := 0; done < n; done += 5000 {
		var evs []*dedupe.Event
		for i := done; i < min(done+5000, n); i++ {
			evs = append(evs, &dedupe.Event{Source: "github", EventID: strconv.Itoa(i),
				ReceivedAt: past, ContentType: "application/json", Body: body})
		}
		if _, err := q.IngestEvents(ctx, evs, q.targets); err != nil {
			b.Fatal(err)
		}
	}
	return q
}
