package postgres_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/leader"
	"hookbox/postgres"
)

// A lease has one holder until it expires or is given up; its holder
// renews it, others cannot take it while it lives.
func TestLead(t *testing.T) {
	u := freshSchema(t)
	ctx := context.Background()
	db := open(t, u, postgres.Options{Logger: zerolog.Nop()})
	const ttl = 300 * time.Millisecond
	lead := func(holder string) bool {
		t.Helper()
		ok, err := db.Lead(ctx, "sweeper", holder, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !lead("a") {
		t.Fatal("a: first to ask, not leading")
	}
	if lead("b") {
		t.Fatal("b took a live lease")
	}
	if !lead("a") {
		t.Fatal("a could not renew its own lease")
	}
	if ok, _ := db.Lead(ctx, "alerter", "b", ttl); !ok {
		t.Fatal("b: another name's lease, not leading")
	}
	time.Sleep(ttl + 100*time.Millisecond)
	if !lead("b") {
		t.Fatal("b could not take an expired lease")
	}
	if lead("a") {
		t.Fatal("a renewed a lease b took over")
	}
	if err := db.Resign(ctx, "sweeper", "a"); err != nil {
		t.Fatal(err)
	}
	if h, _, _ := db.Holder(ctx, "sweeper"); h != "b" {
		t.Fatalf("holder after a non-holder resigned: %q, want b", h)
	}
	if err := db.Resign(ctx, "sweeper", "b"); err != nil {
		t.Fatal(err)
	}
	if !lead("a") {
		t.Fatal("a could not take a lease given up")
	}
}

// Electors of three replicas on one database run the work one at a time;
// when the leader stops, another takes over without waiting for the lease
// to expire (the lease given up is announced); when its store refuses the
// renewal, the leader stops the work.
func TestElector(t *testing.T) {
	u := freshSchema(t)
	const ttl = 3 * time.Second
	var running, overlaps atomic.Int32
	type replicaRun struct {
		e      *leader.Elector
		cancel context.CancelFunc
		done   chan struct{}
	}
	var all []*replicaRun
	var mu sync.Mutex
	ran := map[string]int{}
	for _, name := range []string{"r1", "r2", "r3"} {
		db := open(t, u, postgres.Options{Logger: zerolog.Nop()})
		e := &leader.Elector{Store: db, Holder: name, TTL: ttl, Logger: zerolog.Nop()}
		ctx, cancel := context.WithCancel(context.Background())
		r := &replicaRun{e: e, cancel: cancel, done: make(chan struct{})}
		go db.Listen(ctx, postgres.Listener{Leader: e.Wake})
		go func() {
			defer close(r.done)
			e.Run(ctx, "sweeper", func(ctx context.Context) {
				if running.Add(1) > 1 {
					overlaps.Add(1)
				}
				mu.Lock()
				ran[name]++
				mu.Unlock()
				<-ctx.Done()
				running.Add(-1)
			})
		}()
		all = append(all, r)
		t.Cleanup(func() { cancel(); <-r.done })
	}
	leaderOf := func() *replicaRun {
		for _, r := range all {
			if r.e.Leader("sweeper") {
				return r
			}
		}
		return nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for leaderOf() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	first := leaderOf()
	if first == nil {
		t.Fatal("no replica leads after 10s")
	}
	stopped := time.Now()
	first.cancel()
	<-first.done
	var next *replicaRun
	for next == nil && time.Since(stopped) < 10*time.Second {
		time.Sleep(10 * time.Millisecond)
		next = leaderOf()
	}
	if next == nil || next == first {
		t.Fatal("no other replica took over the lease after the leader stopped")
	}
	// Given up: taken before it could have expired (at the earliest two
	// thirds of the lease after its last renewal).
	if took := time.Since(stopped); took >= ttl*2/3 {
		t.Errorf("takeover after a clean stop took %v, want less than %v: the lease was not given up", took, ttl*2/3)
	}
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("the work ran on two replicas at once %d times", n)
	}
}
