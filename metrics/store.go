package metrics

import "github.com/prometheus/client_golang/prometheus"

// CommitStats are the store's commit counters.
type CommitStats struct {
	Commits       int64 // transactions committed
	Writes        int64 // writes batched into them
	FailedCommits int64 // transactions that failed: none of their writes happened
}

// StoreCollector collects the store's commit counters at scrape time.
type StoreCollector struct {
	Read func() CommitStats
}

var (
	commitsDesc = prometheus.NewDesc("hookbox_store_commits_total",
		"Transactions committed (one fsync each with store.synchronous full); writes ÷ commits is the group commit's batch size.", nil, nil)
	writesDesc = prometheus.NewDesc("hookbox_store_writes_total",
		"Writes (an event received, a claim, a result, ...) batched into committed transactions.", nil, nil)
	failedDesc = prometheus.NewDesc("hookbox_store_failed_commits_total",
		"Transactions that failed to commit: none of their writes happened.", nil, nil)
)

// Describe sends the collector's descriptors.
func (c StoreCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- commitsDesc
	ch <- writesDesc
	ch <- failedDesc
}

// Collect sends the counters.
func (c StoreCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.Read()
	ch <- prometheus.MustNewConstMetric(commitsDesc, prometheus.CounterValue, float64(s.Commits))
	ch <- prometheus.MustNewConstMetric(writesDesc, prometheus.CounterValue, float64(s.Writes))
	ch <- prometheus.MustNewConstMetric(failedDesc, prometheus.CounterValue, float64(s.FailedCommits))
}
