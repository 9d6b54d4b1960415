// Package metrics serves hookbox's counters and queue figures in the Prometheus text format.
package metrics

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"hookbox/queue"
	"hookbox/receiver"
)

// latencyBuckets are the receive→done histogram's upper bounds, in seconds.
var latencyBuckets = []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 30, 60, 300, 1800, 3600, 21600, 86400}

// Queue is where the queue figures come from: the store engine.
type Queue interface {
	// QueueStats counts the queued and dead deliveries and dates the
	// oldest queued one.
	QueueStats(ctx context.Context) (queue.Stats, error)
}

// CommitStats are the store's commit counters.
type CommitStats struct {
	Commits       int64 // transactions committed
	Writes        int64 // writes batched into them
	FailedCommits int64 // transactions that failed: none of their writes happened
}

// Metrics serves counters and queue figures in the Prometheus text format.
type Metrics struct {
	q        Queue
	now      func() time.Time
	Receiver *receiver.Counters
	Dead     atomic.Int64
	// Store reads the store's commit counters; nil leaves them out.
	Store func() CommitStats

	mu      sync.Mutex
	buckets []int64
	count   int64
	sum     float64
}

// New returns metrics reading queue figures from q.
func New(q Queue, now func() time.Time) *Metrics {
	return &Metrics{q: q, now: now, buckets: make([]int64, len(latencyBuckets))}
}

// ObserveDone records one successful delivery of an event received at t.
func (m *Metrics) ObserveDone(received time.Time) {
	d := m.now().Sub(received).Seconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.count++
	m.sum += d
	for i, b := range latencyBuckets {
		if d <= b {
			m.buckets[i]++
		}
	}
}

func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	st, err := m.q.QueueStats(ctx)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	if c := m.Receiver; c != nil {
		fmt.Fprintf(w, "# HELP hookbox_received_total Webhooks answered 200, by result.\n# TYPE hookbox_received_total counter\n")
		fmt.Fprintf(w, "hookbox_received_total{result=\"accepted\"} %d\n", c.Accepted.Load())
		fmt.Fprintf(w, "hookbox_received_total{result=\"duplicate\"} %d\n", c.Duplicates.Load())
		fmt.Fprintf(w, "# HELP hookbox_duplicate_conflicts_total Redeliveries whose body differed from the stored one.\n# TYPE hookbox_duplicate_conflicts_total counter\n")
		fmt.Fprintf(w, "hookbox_duplicate_conflicts_total %d\n", c.Conflicts.Load())
		fmt.Fprintf(w, "# HELP hookbox_rejected_total Requests answered 4xx.\n# TYPE hookbox_rejected_total counter\nhookbox_rejected_total %d\n", c.Rejected.Load())
		fmt.Fprintf(w, "# HELP hookbox_unavailable_total Requests answered 503 (store could not commit).\n# TYPE hookbox_unavailable_total counter\nhookbox_unavailable_total %d\n", c.Failed.Load())
	}
	if m.Store != nil {
		s := m.Store()
		fmt.Fprintf(w, "# HELP hookbox_store_commits_total Transactions committed (one fsync each with store.synchronous full); writes ÷ commits is the group commit's batch size.\n# TYPE hookbox_store_commits_total counter\nhookbox_store_commits_total %d\n", s.Commits)
		fmt.Fprintf(w, "# HELP hookbox_store_writes_total Writes (an event received, a claim, a result, ...) batched into committed transactions.\n# TYPE hookbox_store_writes_total counter\nhookbox_store_writes_total %d\n", s.Writes)
		fmt.Fprintf(w, "# HELP hookbox_store_failed_commits_total Transactions that failed to commit: none of their writes happened.\n# TYPE hookbox_store_failed_commits_total counter\nhookbox_store_failed_commits_total %d\n", s.FailedCommits)
	}
	fmt.Fprintf(w, "# HELP hookbox_dead_total Deliveries that went dead since start.\n# TYPE hookbox_dead_total counter\nhookbox_dead_total %d\n", m.Dead.Load())
	m.mu.Lock()
	count, sum, buckets := m.count, m.sum, slices.Clone(m.buckets)
	m.mu.Unlock()
	// The same count as hookbox_receive_to_done_seconds_count, under the
	// name a dashboard looks for.
	fmt.Fprintf(w, "# HELP hookbox_delivered_total Deliveries that succeeded since start.\n# TYPE hookbox_delivered_total counter\nhookbox_delivered_total %d\n", count)
	fmt.Fprintf(w, "# HELP hookbox_deliveries Deliveries queued (pending, running, retrying) or dead in the store.\n# TYPE hookbox_deliveries gauge\n")
	statuses := make([]string, 0, len(st.ByStatus))
	for s := range st.ByStatus {
		statuses = append(statuses, s)
	}
	sort.Strings(statuses)
	for _, s := range statuses {
		fmt.Fprintf(w, "hookbox_deliveries{status=%q} %d\n", s, st.ByStatus[s])
	}
	age := 0.0
	if !st.OldestQueued.IsZero() {
		age = m.now().Sub(st.OldestQueued).Seconds()
	}
	fmt.Fprintf(w, "# HELP hookbox_oldest_queued_seconds Age of the oldest delivery not yet done or dead.\n# TYPE hookbox_oldest_queued_seconds gauge\nhookbox_oldest_queued_seconds %.3f\n", age)
	fmt.Fprintf(w, "# HELP hookbox_receive_to_done_seconds Time from receipt to successful delivery.\n# TYPE hookbox_receive_to_done_seconds histogram\n")
	for i, b := range latencyBuckets {
		fmt.Fprintf(w, "hookbox_receive_to_done_seconds_bucket{le=\"%g\"} %d\n", b, buckets[i])
	}
	fmt.Fprintf(w, "hookbox_receive_to_done_seconds_bucket{le=\"+Inf\"} %d\nhookbox_receive_to_done_seconds_sum %g\nhookbox_receive_to_done_seconds_count %d\n", count, sum, count)
}
