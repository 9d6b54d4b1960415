package sqlite

import (
	"context"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/dedupe"
	"hookbox/queue"
)

// cpuTime is the CPU this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkQueueIndexesCost is what the two indexes migration 0011
// dropped cost each delivery: the same ingest (one delivery each), claim
// and completion as done, on a store as this build keeps it (now) and on
// one with deliveries_waiting (0010) and deliveries_finished (0009) made
// again (before), with synchronous=off so that the fsync, which dwarfs
// them, does not hide the CPU they add.
func BenchmarkQueueIndexesCost(b *testing.B) {
	for _, v := range []struct {
		name string
		make []string
	}{
		{"now", nil},
		{"before", []string{`CREATE INDEX deliveries_waiting ON deliveries (target, status, created_at)
			WHERE (status = 'pending' OR status = 'retrying' OR status = 'running' OR status = 'paused')`,
			`CREATE INDEX deliveries_finished ON deliveries (target, done_at) WHERE (status = 'done' OR status = 'dead')`}},
	} {
		b.Run(v.name, func(b *testing.B) {
			db, err := Open(filepath.Join(b.TempDir(), "hookbox.db"), Options{Synchronous: "off", Logger: zerolog.Nop()})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			ctx := context.Background()
			for _, q := range v.make {
				if _, err := db.Exec(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
			body := make([]byte, 1024)
			now := time.Now()
			const batch = 64
			seq := 0
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				var wg sync.WaitGroup
				for range batch {
					seq++
					id := strconv.Itoa(seq)
					wg.Go(func() {
						if _, err := db.IngestEvent(ctx, &dedupe.Event{Source: "github", EventID: id, ReceivedAt: now, Body: body}, []string{"sink"}); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
				jobs, err := db.Claim(ctx, batch, time.Minute, now, nil)
				if err != nil || len(jobs) != batch {
					b.Fatalf("claimed %d (%v), want %d", len(jobs), err, batch)
				}
				for _, j := range jobs {
					wg.Go(func() {
						f := queue.Finish{Attempt: queue.Attempt{Number: j.Attempt, StartedAt: now, Outcome: "ok", HTTPStatus: 200}}
						if err := db.Complete(ctx, j, f, now); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/delivery")
			// The process's CPU, not the wall clock: what the machine's
			// other work does not change.
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*batch), "cpu-ns/delivery")
		})
	}
}
