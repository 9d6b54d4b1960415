package metrics

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hookbox/queue"
)

// Queue is where the queue figures come from: the store engine.
type Queue interface {
	// QueueByTarget counts each target's waiting and dead deliveries
	// and dates its oldest waiting one, in one read.
	QueueByTarget(ctx context.Context) (queue.TargetQueue, error)
}

// QueueCollector collects hookbox_deliveries{target,status} and
// hookbox_oldest_queued_seconds{target} from one read of the store a
// scrape. Targets lists the configured targets, shown at zero when
// nothing of theirs waits (a series that vanishes cannot be alerted on).
//
// A read that takes long (a queue of a million deliveries) is not made on
// every scrape: while its figures are younger than ten times what the read
// cost, a scrape answers them at once, and an older one answers them too
// while one read in the background brings them up to date. A scrape thus
// never waits for the queue to be counted but the first time (Warm makes
// that read as serve starts), and the counting costs the store a tenth of
// a connection's time at most.
type QueueCollector struct {
	Store   Queue
	Targets []string
	Now     func() time.Time
	Timeout time.Duration // default 5s

	mu      sync.Mutex
	last    queue.TargetQueue
	lastErr error
	at      time.Time     // when last was read
	took    time.Duration // what that read cost
	reading bool          // a background read runs
	first   chan struct{} // Warm's read, closed when it is done
}

// Warm starts the first read in the background (serve calls it as it
// starts), so that the first scrape finds figures rather than counting a
// large queue itself; a scrape that comes while that read runs waits for
// it.
func (c *QueueCollector) Warm() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.first != nil || !c.at.IsZero() {
		return
	}
	c.first, c.reading = make(chan struct{}), true
	go func() {
		c.read()
		close(c.first)
	}()
}

// quickRead is the longest read made on every scrape.
const quickRead = 50 * time.Millisecond

var (
	deliveriesDesc = prometheus.NewDesc("hookbox_deliveries",
		"Deliveries waiting (pending, running, retrying, paused) or dead (not revived) in the store, by target and status; done ones are not counted (hookbox_receive_to_done_seconds_count counts them).",
		[]string{"target", "status"}, nil)
	oldestDesc = prometheus.NewDesc("hookbox_oldest_queued_seconds",
		"Age of each target's oldest waiting delivery (0 when none waits).",
		[]string{"target"}, nil)
)

// shownStatuses are the statuses every target shows, at zero if need be.
var shownStatuses = []string{queue.Pending, queue.Running, queue.Retrying, queue.Paused, queue.Dead}

// Describe sends the collector's descriptors.
func (c *QueueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- deliveriesDesc
	ch <- oldestDesc
}

// read reads the store and keeps what it read, with every target and
// shown status at zero where nothing of it waits.
func (c *QueueCollector) read() (queue.TargetQueue, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmpOr(c.Timeout, 5*time.Second))
	defer cancel()
	start := time.Now()
	q, err := c.Store.QueueByTarget(ctx)
	took := time.Since(start)
	if err == nil {
		for _, t := range c.Targets {
			if q[t] == nil {
				q.Add(t, queue.Pending, 0, time.Time{})
			}
		}
		for _, s := range q {
			for _, st := range shownStatuses {
				if _, ok := s.ByStatus[st]; !ok {
					s.ByStatus[st] = 0
				}
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last, c.lastErr, c.at, c.took, c.reading = q, err, time.Now(), took, false
	return q, err
}

// figures are the queue's figures for a scrape: read now when reading is
// quick (or the last read failed, or there was none), else the last ones,
// brought up to date in the background once they are older than ten
// times their read's cost.
func (c *QueueCollector) figures() (queue.TargetQueue, error) {
	c.mu.Lock()
	if first := c.first; c.at.IsZero() && first != nil {
		c.mu.Unlock()
		<-first
		c.mu.Lock()
	}
	if c.at.IsZero() || c.lastErr != nil || c.took < quickRead {
		c.mu.Unlock()
		return c.read()
	}
	q := c.last
	if !c.reading && time.Since(c.at) >= 10*c.took {
		c.reading = true
		go c.read()
	}
	c.mu.Unlock()
	return q, nil
}

// Collect sends the queue's figures; when the read fails, an invalid
// metric says so and the rest of the scrape goes on. The figures sent are
// never written to afterwards: scrapes may run at once.
func (c *QueueCollector) Collect(ch chan<- prometheus.Metric) {
	q, err := c.figures()
	if err != nil {
		ch <- prometheus.NewInvalidMetric(deliveriesDesc, err)
		return
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	at := now()
	for _, target := range slices.Sorted(maps.Keys(q)) {
		s := q[target]
		for _, st := range slices.Sorted(maps.Keys(s.ByStatus)) {
			ch <- prometheus.MustNewConstMetric(deliveriesDesc, prometheus.GaugeValue, float64(s.ByStatus[st]), target, st)
		}
		age := 0.0
		if !s.OldestQueued.IsZero() {
			age = max(0, at.Sub(s.OldestQueued).Seconds())
		}
		ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, age, target)
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
