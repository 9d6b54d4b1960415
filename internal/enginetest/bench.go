package enginetest

import (
	"context"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"hookbox/dedupe"
	"hookbox/order"
	"hookbox/queue"
)

// BenchLaneComplete is each engine's BenchmarkLaneComplete, on fresh
// stores from open (closed when the benchmark ends): 64 due heads of a
// fifo target whose events spread round robin over 1,000 keys, claimed
// and completed at once, each completion of a lane's head also promoting
// the lane's next delivery, made due (handover=no: the next claim takes
// it) or claimed by the completion for its caller (handover=yes,
// Finish.Lease). Read ns/delivery against BenchmarkClaimComplete's
// parallel run; cpu-ns/delivery is steadier on a shared machine.
func BenchLaneComplete(b *testing.B, open func(b *testing.B) Engine) {
	const batch, keys = 64, 1000
	for _, handover := range []bool{false, true} {
		name := "handover=no"
		if handover {
			name = "handover=yes"
		}
		b.Run(name, func(b *testing.B) {
			db := open(b)
			fillLanes(b, db, b.N*batch+keys, keys)
			ctx := context.Background()
			var next []*queue.Job // handed over by the previous round's completions
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
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
			b.ReportMetric(float64((processCPU()-cpu0).Nanoseconds())/float64(b.N*batch), "cpu-ns/delivery")
		})
	}
}

// processCPU is the CPU this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fillLanes makes db's target "sink" fifo and stores n events of 1 KiB
// over keys order keys, round robin, each key's versions rising.
func fillLanes(b *testing.B, db Engine, n, keys int) {
	b.Helper()
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
}
