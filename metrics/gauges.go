package metrics

import (
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// Gauges is a collector of one labelled family read at scrape time: Read
// returns a value by label value (hookbox_health{alarm}, paused targets,
// blocked lanes by target, ...). A figure some part already holds becomes
// a metric with one Register(Gauges{...}) where Main wires that part.
type Gauges struct {
	Name, Help, Label string
	// Counter makes the family a counter (Read returns running totals,
	// e.g. skipped deliveries by reason) instead of a gauge.
	Counter bool
	Read    func() map[string]float64
}

func (g Gauges) desc() *prometheus.Desc {
	return prometheus.NewDesc(g.Name, g.Help, []string{g.Label}, nil)
}

// Describe sends the family's descriptor.
func (g Gauges) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc() }

// Collect sends the values Read returns, in label order.
func (g Gauges) Collect(ch chan<- prometheus.Metric) {
	d := g.desc()
	t := prometheus.GaugeValue
	if g.Counter {
		t = prometheus.CounterValue
	}
	vals := g.Read()
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		ch <- prometheus.MustNewConstMetric(d, t, vals[k], k)
	}
}
