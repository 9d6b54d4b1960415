package main

import (
	"context"
	"sync"
	"time"

	"hookbox/metrics"
	"hookbox/queue"
)

// This file adds to the metrics what ordering, pauses, throttling, refetch,
// leadership and the health alarms tell: each family read at scrape time
// from its part, or counted as it happens.

// scrapeTimeout bounds a store read made for one scrape.
const scrapeTimeout = 5 * time.Second

// throttleCounts counts the deliveries the pool deferred for want of a
// token or a slot, by target (PoolConfig.OnThrottled).
type throttleCounts struct {
	mu sync.Mutex
	n  map[string]float64
}

func (c *throttleCounts) add(target, reason string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[target+"/"+reason] += float64(n)
}

func (c *throttleCounts) read() map[string]float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]float64, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

// registerAreaMetrics registers the families of the parts built after the
// store: call it once the pool, the health monitor and the fetchers exist.
func (m *Main) registerAreaMetrics() error {
	read := func(f func(ctx context.Context) map[string]float64) func() map[string]float64 {
		return func() map[string]float64 {
			ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
			defer cancel()
			return f(ctx)
		}
	}
	lanes := func(ctx context.Context) (queue.LaneStats, bool) {
		s, err := m.Store.LaneStats(ctx)
		return s, err == nil
	}
	cs := []metrics.Gauges{
		{Name: "hookbox_health", Help: "1 while an alarm of this kind fires (any source or target), 0 while it watches.", Label: "alarm",
			Read: read(func(ctx context.Context) map[string]float64 {
				firing, err := m.Health.Firing(ctx)
				if err != nil {
					return nil
				}
				out := make(map[string]float64, len(firing))
				for k, on := range firing {
					out[k] = b2f(on)
				}
				return out
			})},
		{Name: "hookbox_target_paused", Help: "1 while hookbox pause holds the target's deliveries.", Label: "target",
			Read: read(func(ctx context.Context) map[string]float64 {
				paused, err := m.Store.Paused(ctx)
				if err != nil {
					return nil
				}
				out := map[string]float64{}
				for _, t := range m.Config.TargetNames() {
					out[t] = 0
				}
				for _, p := range paused {
					out[p.Name] = 1
				}
				return out
			})},
		{Name: "hookbox_lanes_blocked", Help: "Ordering lanes whose head is retrying or whose target is paused (hookbox lanes --blocked), and how long the oldest has been.", Label: "figure",
			Read: read(func(ctx context.Context) map[string]float64 {
				s, ok := lanes(ctx)
				if !ok {
					return nil
				}
				age := 0.0
				if !s.OldestBlocked.IsZero() {
					age = m.Now().Sub(s.OldestBlocked).Seconds()
				}
				return map[string]float64{"lanes": float64(s.Blocked), "oldest_seconds": max(age, 0)}
			})},
		{Name: "hookbox_deliveries_skipped", Help: "Stored deliveries an ordering rule skipped, by reason.", Label: "reason",
			Read: read(func(ctx context.Context) map[string]float64 {
				s, ok := lanes(ctx)
				if !ok {
					return nil
				}
				out := map[string]float64{"stale": 0, "superseded": 0}
				for k, v := range s.Skipped {
					out[k] = float64(v)
				}
				return out
			})},
		{Name: "hookbox_refetches_total", Help: "Fetches of a resource's current state before an attempt, by outcome.", Label: "outcome", Counter: true,
			Read: func() map[string]float64 {
				c := &m.Refetch.Counters
				return map[string]float64{"ok": float64(c.OK.Load()), "gone": float64(c.Gone.Load()),
					"failed": float64(c.Failed.Load()), "rate_limited": float64(c.RateLimited.Load())}
			}},
		{Name: "hookbox_leader", Help: "1 while this serve holds the lease of the work that runs on one replica at a time.", Label: "lease",
			Read: func() map[string]float64 {
				out := map[string]float64{}
				for _, l := range []string{"sweeper", "alerter", "health"} {
					out[l] = b2f(m.Elector.Leader(l))
				}
				return out
			}},
		{Name: "hookbox_throttled_total", Help: "Claimed deliveries put back for want of a rate token or a concurrency slot, by target/reason.", Label: "target_reason", Counter: true,
			Read: m.throttled.read},
	}
	for _, c := range cs {
		if err := m.Metrics.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
