package metrics

import (
	"context"
	"time"

	"hookbox/queue"
)

// State is where the families read at scrape time come from: the parts
// Main built, each a func so that a part it lacks is left out (nil).
type State struct {
	// Alarms reports each alarm kind turned on, true while it fires
	// (health.Monitor.Firing): hookbox_health{alarm}.
	Alarms func(ctx context.Context) (map[string]bool, error)
	// Paused lists the paused targets (the store): hookbox_target_paused,
	// every one of Targets shown.
	Paused  func(ctx context.Context) ([]queue.PausedTarget, error)
	Targets []string
	// Lanes gives the ordering lanes' figures (the store):
	// hookbox_lanes_blocked, hookbox_deliveries_skipped.
	Lanes func(ctx context.Context) (queue.LaneStats, error)
	// Refetches counts the fetches by outcome (refetch.Counters.ByOutcome):
	// hookbox_refetches_total.
	Refetches func() map[string]int64
	// Leader says whether this serve holds lease, for each of Leases:
	// hookbox_leader{lease}.
	Leader func(lease string) bool
	Leases []string
	Now    func() time.Time
}

// stateTimeout bounds a store read made for one scrape.
const stateTimeout = 5 * time.Second

// RegisterState registers the families State's parts give.
func (m *Metrics) RegisterState(s State) error {
	now := s.Now
	if now == nil {
		now = time.Now
	}
	read := func(f func(ctx context.Context) map[string]float64) func() map[string]float64 {
		return func() map[string]float64 {
			ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
			defer cancel()
			return f(ctx)
		}
	}
	var gs []Gauges
	if s.Alarms != nil {
		gs = append(gs, Gauges{Name: "hookbox_health", Label: "alarm",
			Help: "1 while an alarm of this kind fires (any source or target), 0 while it watches.",
			Read: read(func(ctx context.Context) map[string]float64 {
				firing, err := s.Alarms(ctx)
				if err != nil {
					return nil
				}
				out := make(map[string]float64, len(firing))
				for k, on := range firing {
					out[k] = b2f(on)
				}
				return out
			})})
	}
	if s.Paused != nil {
		gs = append(gs, Gauges{Name: "hookbox_target_paused", Label: "target",
			Help: "1 while hookbox pause holds the target's deliveries.",
			Read: read(func(ctx context.Context) map[string]float64 {
				paused, err := s.Paused(ctx)
				if err != nil {
					return nil
				}
				out := make(map[string]float64, len(s.Targets))
				for _, t := range s.Targets {
					out[t] = 0
				}
				for _, p := range paused {
					out[p.Name] = 1
				}
				return out
			})})
	}
	if s.Lanes != nil {
		gs = append(gs, Gauges{Name: "hookbox_lanes_blocked", Label: "figure",
			Help: "Ordering lanes whose head is retrying or whose target is paused (hookbox lanes --blocked), and how long the oldest has been.",
			Read: read(func(ctx context.Context) map[string]float64 {
				st, err := s.Lanes(ctx)
				if err != nil {
					return nil
				}
				age := 0.0
				if !st.OldestBlocked.IsZero() {
					age = max(now().Sub(st.OldestBlocked).Seconds(), 0)
				}
				return map[string]float64{"lanes": float64(st.Blocked), "oldest_seconds": age}
			})},
			Gauges{Name: "hookbox_deliveries_skipped", Label: "reason",
				Help: "Stored deliveries an ordering rule skipped, by reason.",
				Read: read(func(ctx context.Context) map[string]float64 {
					st, err := s.Lanes(ctx)
					if err != nil {
						return nil
					}
					out := map[string]float64{queue.ReasonStale: 0, queue.ReasonSuperseded: 0}
					for k, v := range st.Skipped {
						out[k] = float64(v)
					}
					return out
				})})
	}
	if s.Refetches != nil {
		gs = append(gs, Gauges{Name: "hookbox_refetches_total", Label: "outcome", Counter: true,
			Help: "Fetches of a resource's current state before an attempt, by outcome: ok, gone, failed, rate_limited.",
			Read: func() map[string]float64 {
				out := map[string]float64{}
				for k, v := range s.Refetches() {
					out[k] = float64(v)
				}
				return out
			}})
	}
	if s.Leader != nil {
		gs = append(gs, Gauges{Name: "hookbox_leader", Label: "lease",
			Help: "1 while this serve holds the lease of the work that runs on one replica at a time.",
			Read: func() map[string]float64 {
				out := make(map[string]float64, len(s.Leases))
				for _, l := range s.Leases {
					out[l] = b2f(s.Leader(l))
				}
				return out
			}})
	}
	for _, g := range gs {
		if err := m.Register(g); err != nil {
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
