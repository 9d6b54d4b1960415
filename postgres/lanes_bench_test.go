package postgres_test

import (
	"context"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/dedupe"
	"hookbox/order"
	"hookbox/postgres"
	"hookbox/postgres/pgtest"
	"hookbox/queue"
)

// BenchmarkLaneComplete is sqlite's BenchmarkLaneComplete on PostgreSQL:
// 64 due heads of a fifo target whose events spread round robin over 1,000 keys, claimed and
// completed at once: each completion of a lane's head also promotes the
// lane's next delivery, made due (handover=no: the next claim takes it) or
// claimed by the completion for its caller (handover=yes, Finish.Lease).
func BenchmarkLaneComplete(b *testing.B) {
	const batch, keys = 64, 1000
	for _, handover := range []bool{false, true} {
		name := "handover=no"
		if handover {
			name = "handover=yes"
		}
		b.Run(name, func(b *testing.B) {
			db := laneStore(b, b.N*batch+keys, keys)
			ctx := context.Background()
			var next []*queue.Job // handed over by the previous round's completions
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := laneCPU()
			for range b.N {
				now := time.Now()
				jobs := next
				next = nil
				if len(jobs) < batch {
					more, err := db.Claim(ctx, batch-len(jobs), time.Minute, now, nil)
					if err != nil {
						b.Fatal(err)
					}
					jobs = append(jobs, more...)
				}
				if len(jobs) != batch {
					b.Fatalf("claimed %d, want %d", len(jobs), batch)
				}
				var wg sync.WaitGroup
				var mu sync.Mutex
				for _, j := range jobs {
					wg.Go(func() {
						f := queue.Finish{Attempt: queue.Attempt{Number: j.Attempt, StartedAt: now, Duration: time.Millisecond, Outcome: "ok", HTTPStatus: 200}}
						if handover {
							f.Lease = time.Minute
						}
						if err := db.Complete(ctx, j, f, now); err != nil {
							b.Error(err)
						}
						if j.Next != nil {
							mu.Lock()
							next = append(next, j.Next)
							mu.Unlock()
						}
					})
				}
				wg.Wait()
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/delivery")
			// The process's CPU a delivery: steadier than the time on a
			// shared machine.
			b.ReportMetric(float64((laneCPU()-cpu0).Nanoseconds())/float64(b.N*batch), "cpu-ns/delivery")
		})
	}
}

// laneCPU is the CPU this process has used, user and system.
func laneCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// laneStore opens a store whose target "sink" is fifo, holding n events of
// 1 KiB over keys order keys, round robin, each key's versions rising.
func laneStore(b *testing.B, n, keys int) *postgres.DB {
	b.Helper()
	db, err := postgres.Open(context.Background(), pgtest.Schema(b, "hookbox_bench_", "the PostgreSQL benchmarks"), postgres.Options{Logger: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	db.SetOrder(map[string]order.Lane{"sink": {Mode: order.FIFO}})
	ctx := context.Background()
	body := make([]byte, 1024)
	past := time.Now().Add(-time.Minute)
	for done := 0; done < n; done += 5000 {
		var evs []*dedupe.Event
		for i := done; i < min(done+5000, n); i++ {
			v := strconv.Itoa(i/keys + 1)
			rank, _ := order.Rank(v)
			evs = append(evs, &dedupe.Event{Source: "github", EventID: strconv.Itoa(i), ReceivedAt: past,
				ContentType: "application/json", Body: body,
				OrderKey: "k" + strconv.Itoa(i%keys), OrderVersion: v, OrderRank: rank})
		}
		if _, err := db.IngestEvents(ctx, evs, []string{"sink"}); err != nil {
			b.Fatal(err)
		}
	}
	return db
}
