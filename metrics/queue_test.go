package metrics_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"hookbox/metrics"
	"hookbox/queue"
)

// slowQueue is a store whose queue read takes delay and reports n pending
// deliveries for target "t".
type slowQueue struct {
	delay time.Duration
	n     atomic.Int64
	reads atomic.Int64
	gate  sync.RWMutex // held: reads wait
}

func (q *slowQueue) QueueByTarget(ctx context.Context) (queue.TargetQueue, error) {
	q.gate.RLock()
	defer q.gate.RUnlock()
	q.reads.Add(1)
	time.Sleep(q.delay)
	tq := queue.TargetQueue{}
	tq.Add("t", queue.Pending, q.n.Load(), time.Now())
	return tq, nil
}

func pending(t *testing.T, c *metrics.QueueCollector) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "hookbox_deliveries" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "status" && l.GetValue() == "pending" {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatal("no hookbox_deliveries{status=pending}")
	return 0
}

// A quick read is made on every scrape: the figures are always current.
func TestQueueCollector_QuickReadEveryScrape(t *testing.T) {
	q := &slowQueue{}
	c := &metrics.QueueCollector{Store: q, Targets: []string{"t", "u"}}
	q.n.Store(3)
	if got := pending(t, c); got != 3 {
		t.Fatalf("pending %v, want 3", got)
	}
	q.n.Store(5)
	if got := pending(t, c); got != 5 {
		t.Fatalf("pending %v after the queue grew, want 5", got)
	}
	if n := testutil.CollectAndCount(c, "hookbox_oldest_queued_seconds"); n != 2 {
		t.Errorf("%d oldest-queued series, want one for each configured target", n)
	}
	// Every status of every configured target, paused included, at zero
	// where nothing has it: a series that appears only once non-zero
	// cannot be alerted on.
	if n := testutil.CollectAndCount(c, "hookbox_deliveries"); n != 2*5 {
		t.Errorf("%d deliveries series, want pending, running, retrying, paused and dead for each of 2 targets", n)
	}
}

// A slow read (a huge queue) is not waited for but the first time: later
// scrapes answer the last figures at once, and one read in the background
// brings them up to date.
func TestQueueCollector_SlowReadInBackground(t *testing.T) {
	q := &slowQueue{delay: 60 * time.Millisecond}
	c := &metrics.QueueCollector{Store: q, Targets: []string{"t"}}
	q.n.Store(1_000_000)
	if got := pending(t, c); got != 1_000_000 {
		t.Fatalf("first scrape: pending %v, want 1000000", got)
	}
	// The store is stuck now: a scrape that read it would wait.
	q.gate.Lock()
	q.n.Store(999_000)
	time.Sleep(700 * time.Millisecond) // older than ten times the read's cost
	got := make(chan float64, 5)
	go func() {
		for range 5 {
			got <- pending(t, c)
		}
	}()
	for range 5 {
		select {
		case v := <-got:
			if v != 1_000_000 {
				t.Errorf("while a read runs: pending %v, want the last figures", v)
			}
		case <-time.After(2 * time.Second):
			q.gate.Unlock()
			t.Fatal("a scrape waited for the stuck store")
		}
	}
	q.gate.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for pending(t, c) != 999_000 {
		if time.Now().After(deadline) {
			t.Fatal("the background read never brought the figures up to date")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := q.reads.Load(); r > 3 {
		t.Errorf("%d reads of the store for a first scrape and one refresh, want at most 3", r)
	}
}

// Warm reads the queue as serve starts: a first scrape after that read
// answers at once, without a read of its own, and one that comes while it
// runs waits for it and answers its figures.
func TestQueueCollector_WarmBeforeTheFirstScrape(t *testing.T) {
	q := &slowQueue{delay: 300 * time.Millisecond}
	q.n.Store(1_000_000)
	c := &metrics.QueueCollector{Store: q, Targets: []string{"t"}}
	c.Warm()
	if got := pending(t, c); got != 1_000_000 {
		t.Fatalf("a scrape during the warming read: pending %v, want its figures", got)
	}
	if r := q.reads.Load(); r != 1 {
		t.Fatalf("%d reads, want the warming one only", r)
	}

	c = &metrics.QueueCollector{Store: q, Targets: []string{"t"}}
	c.Warm()
	time.Sleep(500 * time.Millisecond)
	q.gate.Lock() // stuck: a scrape that read the store would wait
	defer q.gate.Unlock()
	start := time.Now()
	if got := pending(t, c); got != 1_000_000 {
		t.Fatalf("first scrape after warming: pending %v, want 1000000", got)
	}
	if took := time.Since(start); took > 200*time.Millisecond {
		t.Errorf("the first scrape after warming took %v: it read the store", took)
	}
}
