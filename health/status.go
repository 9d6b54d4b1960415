package health

import (
	"context"
	"fmt"
	"time"
)

// Status is the alarms, firing or not, and the figures they are judged on:
// what GET /api/health answers.
type Status struct {
	At            time.Time      `json:"at"`             // when the figures were measured
	WindowSeconds float64        `json:"window_seconds"` // what rates and percentiles are taken over
	Alarms        []AlarmStatus  `json:"alarms"`
	Sources       []SourceStatus `json:"sources"`
	Targets       []TargetStatus `json:"targets"`
}

// AlarmStatus is one alarm of one source or target.
type AlarmStatus struct {
	Alarm  string `json:"alarm"`
	Source string `json:"source,omitempty"`
	Target string `json:"target,omitempty"`
	Firing bool   `json:"firing"`
	// Since is when it entered its state (fired, or resolved); nil for an
	// alarm that never fired.
	Since   *time.Time `json:"since,omitempty"`
	Value   float64    `json:"value"` // now
	Bound   float64    `json:"bound"`
	Unit    string     `json:"unit"`
	Message string     `json:"message"`
}

// SourceStatus is one source's figures over the window.
type SourceStatus struct {
	Name          string     `json:"name"`
	Received      int64      `json:"received"`   // new events
	Duplicates    int64      `json:"duplicates"` // a lower bound (health.Store)
	DuplicateRate float64    `json:"duplicate_rate"`
	LastEvent     *time.Time `json:"last_event,omitempty"` // the last event or duplicate: ever for a source with silence, else in the window
}

// TargetStatus is one target's figures.
type TargetStatus struct {
	Name                string  `json:"name"`
	Queued              int64   `json:"queued"`
	OldestQueuedSeconds float64 `json:"oldest_queued_seconds"`
	// QueuedOlderThan counts the queued deliveries older than 1m, 10m, 1h.
	QueuedOlderThan     map[string]int64 `json:"queued_older_than"`
	Done                int64            `json:"done"` // in the window
	P50Seconds          float64          `json:"receive_to_done_p50_seconds"`
	P99Seconds          float64          `json:"receive_to_done_p99_seconds"`
	ConsecutiveFailures int              `json:"consecutive_failures"`
}

// Status measures the figures now and lists every alarm that is on, with
// its state from the store. It works on any replica, leader or not; its
// error is the store's.
func (m *Monitor) Status(ctx context.Context) (Status, error) {
	now := m.cfg.Now()
	f, err := m.measure(ctx, now)
	if err != nil {
		return Status{}, err
	}
	stored, err := m.s.Alarms(ctx)
	if err != nil {
		return Status{}, fmt.Errorf("read alarms: %w", err)
	}
	m.keepSilences(f, stored)
	byKey := map[[2]string]Alarm{}
	for _, a := range stored {
		byKey[[2]string{a.Kind, a.Subject}] = a
	}
	st := Status{At: now.UTC(), WindowSeconds: m.cfg.Window.Seconds(), Alarms: []AlarmStatus{}, Sources: []SourceStatus{}, Targets: []TargetStatus{}}
	for _, v := range m.verdicts(f, now) {
		a := AlarmStatus{Alarm: v.kind, Value: v.value, Bound: v.bound, Unit: unit(v.kind)}
		if perSource(v.kind) {
			a.Source = v.subject
		} else {
			a.Target = v.subject
		}
		if s, ok := byKey[[2]string{v.kind, v.subject}]; ok {
			a.Firing = s.Firing
			since := s.Since.UTC()
			a.Since = &since
		}
		if a.Firing {
			a.Message = message(v.kind, v.subject, true, v.value, v.bound, m.cfg.Window)
		} else {
			a.Message = watching(v.kind, v.subject, v.value, v.bound, m.cfg.Window, m.cfg.MinVolume)
		}
		st.Alarms = append(st.Alarms, a)
	}
	for _, s := range m.sourceNames(f) {
		c := f.sources[s]
		rate, _ := duplicateRate(c)
		ss := SourceStatus{Name: s, Received: c.Received, Duplicates: c.Duplicates, DuplicateRate: rate}
		if f.hasLast[s] {
			t := f.last[s].UTC()
			ss.LastEvent = &t
		} else if !c.Last.IsZero() {
			t := c.Last.UTC()
			ss.LastEvent = &t
		}
		st.Sources = append(st.Sources, ss)
	}
	for _, t := range m.targetNames(f) {
		q, l := f.queues[t], f.latency[t]
		ts := TargetStatus{Name: t, Queued: q.Queued, OldestQueuedSeconds: queuedAge(q, now).Seconds(),
			QueuedOlderThan: map[string]int64{}, Done: l.Done, P50Seconds: l.P50.Seconds(), P99Seconds: l.P99.Seconds(),
			ConsecutiveFailures: f.streak[t]}
		for i, e := range AgeEdges {
			var n int64
			if i < len(q.OlderThan) {
				n = q.OlderThan[i]
			}
			ts.QueuedOlderThan[shortDuration(e)] = n
		}
		st.Targets = append(st.Targets, ts)
	}
	return st, nil
}

// Firing reports, for each alarm that is on, whether any of its sources
// or targets fires: hookbox_health{alarm}. It reads the store, so every
// replica reports what the leader decided.
func (m *Monitor) Firing(ctx context.Context) (map[string]bool, error) {
	stored, err := m.s.Alarms(ctx)
	if err != nil {
		return nil, fmt.Errorf("read alarms: %w", err)
	}
	out := map[string]bool{}
	for _, k := range Kinds {
		if m.on(k) {
			out[k] = false
		}
	}
	for _, a := range stored {
		if a.Firing {
			out[a.Kind] = true
		}
	}
	return out, nil
}

// On lists the alarm kinds turned on, in Kinds' order.
func (m *Monitor) On() []string {
	var out []string
	for _, k := range Kinds {
		if m.on(k) {
			out = append(out, k)
		}
	}
	return out
}

// on reports whether alarm kind is turned on.
func (m *Monitor) on(kind string) bool {
	switch kind {
	case DuplicateRate:
		return m.cfg.DuplicateRate > 0
	case OldestQueued:
		return m.cfg.OldestQueued > 0
	case ReceiveToDone:
		return m.cfg.ReceiveToDoneP99 > 0
	case TargetFailing:
		return m.cfg.TargetFailing > 0
	case Silence:
		for _, s := range m.cfg.Sources {
			if s.Silence > 0 {
				return true
			}
		}
	}
	return false
}

// shortDuration is "1m", "10m", "1h".
func shortDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
