package metrics

import (
	"context"
	"maps"
	"slices"
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
type QueueCollector struct {
	Store   Queue
	Targets []string
	Now     func() time.Time
	Timeout time.Duration // default 5s
}

var (
	deliveriesDesc = prometheus.NewDesc("hookbox_deliveries",
		"Deliveries waiting (pending, running, retrying, paused) or dead (not revived) in the store, by target and status; done ones are not counted (hookbox_receive_to_done_seconds_count counts them).",
		[]string{"target", "status"}, nil)
	oldestDesc = prometheus.NewDesc("hookbox_oldest_queued_seconds",
		"Age of each target's oldest waiting delivery (0 when none waits).",
		[]string{"target"}, nil)
)

// shownStatuses are the statuses every target shows, at zero if need be.
var shownStatuses = []string{queue.Pending, queue.Running, queue.Retrying, queue.Dead}

// Describe sends the collector's descriptors.
func (c *QueueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- deliveriesDesc
	ch <- oldestDesc
}

// Collect reads the store once and sends the figures; when the read
// fails, an invalid metric says so and the rest of the scrape goes on.
func (c *QueueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), cmpOr(c.Timeout, 5*time.Second))
	defer cancel()
	q, err := c.Store.QueueByTarget(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(deliveriesDesc, err)
		return
	}
	for _, t := range c.Targets {
		if q[t] == nil {
			q.Add(t, queue.Pending, 0, time.Time{})
		}
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	at := now()
	for _, target := range slices.Sorted(maps.Keys(q)) {
		s := q[target]
		for _, st := range shownStatuses {
			if _, ok := s.ByStatus[st]; !ok {
				s.ByStatus[st] = 0
			}
		}
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
