package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"hookbox/admission"
	"hookbox/internal/live"
	"hookbox/metrics"
)

// This file wires what operators watch a running serve by: the metrics,
// the admission budgets, the liveness checks behind /readyz and systemd's
// watchdog, and the admin routes.

// buildMetrics makes the metrics on a registry of this Main's own, with
// the collectors that read the queue and the store at scrape time.
func (m *Main) buildMetrics() {
	m.Metrics = metrics.New(m.Now)
	read := func() metrics.CommitStats {
		s := m.DB.Stats()
		return metrics.CommitStats{Commits: s.Commits, Writes: s.Writes, FailedCommits: s.FailedCommit}
	}
	if m.PG != nil {
		read = func() metrics.CommitStats {
			s := m.PG.Stats()
			return metrics.CommitStats{Commits: s.Commits, Writes: s.Writes, FailedCommits: s.FailedCommit}
		}
	}
	m.Metrics.Registry.MustRegister(
		metrics.StoreCollector{Read: read},
		&metrics.QueueCollector{Store: m.Store, Targets: m.Config.TargetNames(), Now: m.Now},
	)
	sources := make([]string, len(m.Config.Sources))
	for i, s := range m.Config.Sources {
		sources[i] = s.Name
	}
	m.Metrics.Init(sources, m.Config.TargetNames())
	m.Admin.Mount("GET /metrics", m.Metrics.Handler(promLog{m.component("metrics")}))
}

// buildBudget makes the admission budgets of [store].
func (m *Main) buildBudget() {
	cfg := m.Config.Store
	m.Budget = &admission.Budget{
		MaxQueued:   cfg.MaxQueued,
		Waiting:     m.Store.Waiting,
		MinFreeDisk: uint64(max(0, cfg.MinFreeDisk.Int())),
		Interval:    m.BudgetInterval,
		FreeDisk:    m.FreeDisk,
		Logger:      m.component("admission"),
	}
	if m.DB != nil {
		m.Budget.Dir = filepath.Dir(m.storeID)
	}
}

// startLive starts the liveness checks: a write through the store's
// writer, and the worker pool. With systemd's watchdog, each passing
// round pets it, at least three times per WatchdogSec.
func (m *Main) startLive(ctx context.Context) {
	// A write waits behind the batch being committed: under a burst, a
	// second or two. The check allows 5 s before it says the writer is
	// stuck, and never longer than a third of the watchdog's period.
	every, timeout := 2*time.Second, 5*time.Second
	if m.LiveInterval > 0 {
		every = m.LiveInterval
	}
	if m.Watchdog > 0 {
		every, timeout = min(every, m.Watchdog/3), min(timeout, m.Watchdog/3)
	}
	m.Live = &live.Monitor{
		Checks: []live.Check{
			{Name: "store", Run: m.Store.Ping},
			{Name: "workers", Run: m.Pool.Alive},
		},
		Interval: every,
		Timeout:  timeout,
		Logger:   m.component("live"),
	}
	if m.Watchdog > 0 {
		m.Live.OnPass = func() { m.notify("WATCHDOG=1") }
	}
	m.Live.Start(ctx)
}

// ready is /readyz's verdict: the liveness checks pass and no admission
// budget is exceeded.
func (m *Main) ready() error {
	if err := m.Live.Err(); err != nil {
		return err
	}
	if err := m.Budget.Admit(); err != nil {
		var e *admission.Exceeded
		if errors.As(err, &e) {
			return fmt.Errorf("budget: %w", err)
		}
		return err
	}
	return nil
}

// fallback is what the webhook listener serves beside its own routes:
// the admin routes for the local sink (one loopback listener for all),
// nothing with a config.
func (m *Main) fallback() http.Handler {
	if m.LocalSink || m.ShareListener {
		return m.Admin.Handler()
	}
	return nil
}

// promLog writes the metrics handler's errors (a collector that failed)
// as warnings.
type promLog struct{ log zerolog.Logger }

func (l promLog) Println(v ...any) { l.log.Warn().Msg(strings.TrimSpace(fmt.Sprintln(v...))) }

// notify tells systemd state, when it asked to be told.
func (m *Main) notify(state string) {
	if err := m.Notifier.Notify(state); err != nil {
		log := m.component("systemd")
		log.Warn().Err(err).Msg("could not notify systemd")
	}
}

// AdminAddr is the admin listener's bound address, "" when it is off.
func (m *Main) AdminAddr() string {
	if m.Admin == nil || m.Admin.Addr() == nil {
		return ""
	}
	return m.Admin.Addr().String()
}
