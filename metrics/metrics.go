// Package metrics holds hookbox's Prometheus metrics, on a registry of
// their own (never the default one): the counters and histograms the
// receiver, the worker pool and the alerter feed as things happen, and the
// collectors that read the queue and the store at scrape time. Each area
// has its collector; a new figure read at scrape time is one collector
// (Gauges, or a type of its own) registered with Register.
package metrics

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"hookbox/receiver"
)

// UnknownSource is the source label of requests to a /hooks/ name no
// [[source]] has: one label for all of them, so that requests to made-up
// names cannot grow the number of series.
const UnknownSource = "(unknown)"

// doneBuckets are the receive→done histogram's upper bounds, in seconds:
// from a local target's few milliseconds to a day of retries.
var doneBuckets = []float64{0.01, 0.05, 0.1, 0.5, 1, 5, 30, 60, 300, 1800, 3600, 21600, 86400}

// ackBuckets are the ack latency histogram's upper bounds, in seconds.
var ackBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// Metrics are a running serve's metrics and the registry that serves them.
type Metrics struct {
	Registry *prometheus.Registry
	now      func() time.Time

	received  *prometheus.CounterVec
	ack       prometheus.Histogram
	done      *prometheus.HistogramVec
	delivered prometheus.Counter
	attempts  *prometheus.CounterVec
	dead      *prometheus.CounterVec
	alerts    *prometheus.CounterVec
	throttled *prometheus.CounterVec
}

// New returns the metrics on a new registry holding them and the Go and
// process collectors; now dates receive→done.
func New(now func() time.Time) *Metrics {
	if now == nil {
		now = time.Now
	}
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		now:      now,
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookbox_received_total",
			Help: "Webhook requests answered, by source and result: accepted, duplicate, rejected (4xx) or unavailable (503); reason says why one was rejected or unavailable.",
		}, []string{"source", "result", "reason"}),
		ack: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "hookbox_ack_seconds",
			Help:    "Time from a webhook request's arrival to its answer, for every answer.",
			Buckets: ackBuckets,
		}),
		done: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hookbox_receive_to_done_seconds",
			Help:    "Time from an event's receipt to its successful delivery, by target.",
			Buckets: doneBuckets,
		}, []string{"target"}),
		delivered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookbox_delivered_total",
			Help: "Deliveries that succeeded since the start (hookbox_receive_to_done_seconds_count by target).",
		}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookbox_attempts_total",
			Help: "Delivery attempts recorded, by target and outcome: ok, failed (retried), dead, interrupted (by shutdown) or stale (lease lost).",
		}, []string{"target", "outcome"}),
		dead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookbox_dead_total",
			Help: "Deliveries that went dead since the start, by target.",
		}, []string{"target"}),
		alerts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookbox_alerts_total",
			Help: "Alerts sent through [alert], by kind and outcome: sent, failed (tried again) or given_up.",
		}, []string{"kind", "outcome"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookbox_throttled_total",
			Help: "Claimed deliveries put back, no attempt spent, for want of a rate token or a concurrency slot, by target and reason (rate, concurrency).",
		}, []string{"target", "reason"}),
	}
	m.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.received, m.ack, m.done, m.delivered, m.attempts, m.dead, m.alerts, m.throttled,
	)
	return m
}

// Init makes the series of each source's accepted and duplicate requests
// and each target's attempts and deliveries exist at 0 from the start, so
// that a rate over them is 0, not absent, until something happens.
func (m *Metrics) Init(sources, targets []string) {
	for _, s := range sources {
		m.received.WithLabelValues(s, "accepted", "")
		m.received.WithLabelValues(s, "duplicate", "")
	}
	for _, t := range targets {
		m.done.WithLabelValues(t)
		m.dead.WithLabelValues(t)
		for _, o := range []string{"ok", "failed", "dead"} {
			m.attempts.WithLabelValues(t, o)
		}
	}
}

// InitThrottled makes target's deferral series for reason (rate,
// concurrency) exist at 0: for the targets that have that limit.
func (m *Metrics) InitThrottled(target, reason string) { m.throttled.WithLabelValues(target, reason) }

// ObserveThrottled counts n claimed jobs of target deferred for reason
// (queue.PoolConfig.OnThrottled).
func (m *Metrics) ObserveThrottled(target, reason string, n int) {
	m.throttled.WithLabelValues(target, reason).Add(float64(n))
}

// InitAlerts makes the alerts' series of each kind exist at 0 (where
// alerts are sent at all: an [alert] configured).
func (m *Metrics) InitAlerts(kinds []string) {
	for _, k := range kinds {
		for _, o := range []string{"sent", "failed", "given_up"} {
			m.alerts.WithLabelValues(k, o)
		}
	}
}

// Register adds collectors to the registry; it fails on a name or label
// set already registered.
func (m *Metrics) Register(cs ...prometheus.Collector) error {
	for _, c := range cs {
		if err := m.Registry.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Handler serves the registry in the Prometheus exposition format. A
// collector that fails (the store cannot be read) leaves out its figures
// and the scrape goes on with the rest; the error goes to log.
func (m *Metrics) Handler(log zerolog.Logger) http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{
		ErrorLog:            warnLog{log},
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	})
}

// ObserveAnswer counts one answered webhook request and its latency
// (receiver.Config.Observe).
func (m *Metrics) ObserveAnswer(a receiver.Answer) {
	source, result := a.Source, a.Result
	switch {
	case a.Reason == "unknown_source":
		source = UnknownSource
		result = "rejected"
	case result != "":
	case a.Status >= 500:
		result = "unavailable"
	case a.Status >= 400:
		result = "rejected"
	default:
		// A provider's handshake (Slack's url_verification, ...):
		// answered 200, nothing stored.
		result = "handshake"
	}
	m.received.WithLabelValues(source, result, a.Reason).Inc()
	m.ack.Observe(a.Took.Seconds())
}

// ObserveDone records one successful delivery to target of an event
// received at t (queue.PoolConfig.OnDone).
func (m *Metrics) ObserveDone(target string, received time.Time) {
	m.done.WithLabelValues(target).Observe(max(0, m.now().Sub(received).Seconds()))
	m.delivered.Inc()
}

// ObserveAttempt counts one recorded attempt (queue.PoolConfig.OnAttempt),
// and a dead delivery.
func (m *Metrics) ObserveAttempt(target, outcome string) {
	m.attempts.WithLabelValues(target, outcome).Inc()
	if outcome == "dead" {
		m.dead.WithLabelValues(target).Inc()
	}
}

// ObserveAlert counts one alert send (queue.Alerter.OnOutcome).
func (m *Metrics) ObserveAlert(kind, outcome string) {
	m.alerts.WithLabelValues(kind, outcome).Inc()
}

// warnLog writes the handler's errors (a collector that failed) as
// warnings.
type warnLog struct{ log zerolog.Logger }

func (l warnLog) Println(v ...any) { l.log.Warn().Msg(strings.TrimSpace(fmt.Sprintln(v...))) }
