// Package health watches a webhook flow for the figures that tell its
// health, and turns them into alarms sent through the alerter's notifier:
// a source's duplicate rate (a provider resending is a slow or lost ack),
// a target's oldest queued delivery, its receipt-to-done p99 and its
// failed attempts in a row, and a source gone silent. Each alarm fires
// once, stays quiet while it holds and is sent once more when it clears.
// The alarms' state and the notices still to send are kept in the store,
// so a restart neither repeats a firing alarm nor loses one that was due;
// the checks run on one replica at a time, the one Leader says leads.
package health

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"hookbox/config"
	"hookbox/queue"
)

// Config is what the monitor watches and the bounds of its alarms; a bound
// of 0 turns its alarm off.
type Config struct {
	Window           time.Duration // what the duplicate rate and the p99 are taken over
	DuplicateRate    float64       // a fraction: 0.2
	MinVolume        int           // requests a source needs in the window for its rate to fire
	OldestQueued     time.Duration
	ReceiveToDoneP99 time.Duration
	TargetFailing    int
	Interval         time.Duration // between checks (default 10s)

	Sources []Source // the configured sources; others are watched as they appear
	Targets []string // the configured targets

	// Leader reports whether this process may check and send now: on a
	// store shared by several replicas, whether it holds the leader lease.
	// nil: always (SQLite, one serve per store).
	Leader func(ctx context.Context) bool
	// Backoff is the wait after each failed send (default the alerter's:
	// 5s, doubling); MaxTries bounds the sends of one notice (default 5).
	Backoff  queue.Backoff
	MaxTries int
	// OnOutcome, if set, is told of each send: the alarm's kind and
	// sent, failed (tried again later) or given_up.
	OnOutcome func(kind, outcome string)
	Now       func() time.Time
	Logger    zerolog.Logger
}

// Source is a source the monitor watches.
type Source struct {
	Name    string
	Silence time.Duration // 0: no silence alarm
}

// AgeEdges are the ages Status counts queued deliveries beyond.
var AgeEdges = []time.Duration{time.Minute, 10 * time.Minute, time.Hour}

// Monitor checks the figures every Interval, on the leader only, and sends
// the alarms' notices through a notifier.
type Monitor struct {
	s   Store
	n   queue.Notifier // nil: alarms are kept, nothing is sent
	cfg Config
	log zerolog.Logger

	mu      sync.Mutex           // serializes measures: the cache below
	started time.Time            // the baseline of a silence with no event at all
	last    map[string]time.Time // per silence source, its last event known
	looked  map[string]bool      // silence sources whose last event was read from the store
	leading bool                 // at the last step; a new leader reads the last events again

	cancel context.CancelFunc
	done   chan struct{}

	// Outcomes the store did not take (a full disk), written again before
	// anything else is sent; only the loop's goroutine uses it.
	unrecorded []NoticeOutcome
}

// New returns a monitor of s sending through n (nil: none).
func New(s Store, n queue.Notifier, cfg Config) *Monitor {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.Window <= 0 {
		cfg.Window = 10 * time.Minute
	}
	if cfg.MinVolume < 1 {
		cfg.MinVolume = 1
	}
	if cfg.Backoff.Base <= 0 {
		cfg.Backoff.Base = 5 * time.Second
	}
	if cfg.MaxTries <= 0 {
		cfg.MaxTries = 5
	}
	return &Monitor{s: s, n: n, cfg: cfg, log: cfg.Logger, started: cfg.Now(),
		last: map[string]time.Time{}, looked: map[string]bool{}}
}

// Start runs the checks and the sends until Stop.
func (m *Monitor) Start(ctx context.Context) {
	ctx, m.cancel = context.WithCancel(ctx)
	m.done = make(chan struct{})
	go func() {
		defer close(m.done)
		check := time.NewTicker(m.cfg.Interval)
		defer check.Stop()
		// Failed sends are retried at their due time, to the second.
		send := time.NewTicker(min(time.Second, m.cfg.Interval))
		defer send.Stop()
		m.step(ctx, true)
		for {
			select {
			case <-ctx.Done():
				return
			case <-check.C:
				m.step(ctx, true)
			case <-send.C:
				m.step(ctx, false)
			}
		}
	}()
}

// Stop ends the loop; notices not sent stay due for the next start.
func (m *Monitor) Stop() {
	if m.cancel != nil {
		m.cancel()
		<-m.done
	}
}

func (m *Monitor) step(ctx context.Context, check bool) {
	leading := m.cfg.Leader == nil || m.cfg.Leader(ctx)
	m.mu.Lock()
	if leading && !m.leading {
		// While another replica led, events came that this one did not
		// count: read the silent sources' last events again.
		clear(m.looked)
	}
	m.leading = leading
	m.mu.Unlock()
	if !leading {
		return
	}
	if check {
		if err := m.Check(ctx); err != nil && ctx.Err() == nil {
			m.log.Error().Err(err).Msg("health check failed; the alarms keep their state until the next one")
		}
	}
	m.sendDue(ctx)
}

// verdict is one alarm's figure against its bound.
type verdict struct {
	kind, subject string
	value, bound  float64
	holds         bool
}

// Check measures the figures once and moves each alarm whose condition
// changed: firing (with a notice) or resolved (with a notice). An alarm of
// a source or target no longer configured, or turned off, resolves.
func (m *Monitor) Check(ctx context.Context) error {
	now := m.cfg.Now()
	f, err := m.measure(ctx, now)
	if err != nil {
		return err
	}
	stored, err := m.s.Alarms(ctx)
	if err != nil {
		return fmt.Errorf("read alarms: %w", err)
	}
	firing := map[[2]string]Alarm{}
	for _, a := range stored {
		if a.Firing {
			firing[[2]string{a.Kind, a.Subject}] = a
		}
	}
	m.keepSilences(f, stored)
	seen := map[[2]string]bool{}
	for _, v := range m.verdicts(f, now) {
		k := [2]string{v.kind, v.subject}
		seen[k] = true
		_, on := firing[k]
		if v.holds == on {
			continue
		}
		if err := m.set(ctx, Alarm{Kind: v.kind, Subject: v.subject, Firing: v.holds, Since: now, Value: v.value, Bound: v.bound}); err != nil {
			return err
		}
	}
	for k, a := range firing {
		if !seen[k] {
			if err := m.set(ctx, Alarm{Kind: a.Kind, Subject: a.Subject, Since: now, Bound: a.Bound}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *Monitor) set(ctx context.Context, a Alarm) error {
	changed, err := m.s.SetAlarm(ctx, a, m.n != nil)
	if err != nil {
		return fmt.Errorf("set alarm %s of %s: %w", a.Kind, a.Subject, err)
	}
	if changed {
		state := queue.Resolved
		if a.Firing {
			state = queue.Firing
		}
		m.log.Warn().Str("alarm", a.Kind).Str("subject", a.Subject).Str("state", state).Float64("value", a.Value).
			Float64("bound", a.Bound).Msg(message(a.Kind, a.Subject, a.Firing, a.Value, a.Bound, m.cfg.Window))
	}
	return nil
}

// figures are one measure of the flow.
type figures struct {
	at      time.Time
	sources map[string]SourceCount
	last    map[string]time.Time // silence sources: last event, or the baseline
	hasLast map[string]bool      // whether an event was seen at all
	queues  map[string]QueueAge
	latency map[string]Latency
	streak  map[string]int
}

func (m *Monitor) measure(ctx context.Context, now time.Time) (figures, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := figures{at: now, sources: map[string]SourceCount{}, last: map[string]time.Time{}, hasLast: map[string]bool{},
		queues: map[string]QueueAge{}, latency: map[string]Latency{}, streak: map[string]int{}}
	counts, err := m.s.SourceCounts(ctx, now.Add(-m.cfg.Window))
	if err != nil {
		return f, fmt.Errorf("count receipts: %w", err)
	}
	for _, c := range counts {
		f.sources[c.Source] = c
	}
	for _, s := range m.cfg.Sources {
		if s.Silence <= 0 {
			continue
		}
		if c := f.sources[s.Name]; !c.Last.IsZero() && c.Last.After(m.last[s.Name]) {
			m.last[s.Name] = c.Last
		} else if !m.looked[s.Name] && c.Last.IsZero() {
			// Silent for the whole window: when was the last one?
			t, ok, err := m.s.LastEvent(ctx, s.Name)
			if err != nil {
				return f, fmt.Errorf("last event of %s: %w", s.Name, err)
			}
			if ok && t.After(m.last[s.Name]) {
				m.last[s.Name] = t
			}
		}
		m.looked[s.Name] = true
		if t, ok := m.last[s.Name]; ok {
			f.last[s.Name], f.hasLast[s.Name] = t, true
		} else {
			f.last[s.Name] = m.started
		}
	}
	ages, err := m.s.QueueAges(ctx, now, AgeEdges)
	if err != nil {
		return f, fmt.Errorf("queue ages: %w", err)
	}
	for _, a := range ages {
		f.queues[a.Target] = a
	}
	for _, t := range m.cfg.Targets {
		l, err := m.s.DoneLatency(ctx, t, now.Add(-m.cfg.Window))
		if err != nil {
			return f, fmt.Errorf("receive-to-done of %s: %w", t, err)
		}
		f.latency[t] = l
	}
	if len(m.cfg.Targets) > 0 {
		if f.streak, err = m.s.FailureStreaks(ctx, m.cfg.Targets); err != nil {
			return f, fmt.Errorf("failed attempts in a row: %w", err)
		}
	}
	return f, nil
}

// sourceNames are the configured sources and those that sent in the window.
func (m *Monitor) sourceNames(f figures) []string {
	names := map[string]bool{}
	for _, s := range m.cfg.Sources {
		names[s.Name] = true
	}
	for s := range f.sources {
		names[s] = true
	}
	return slices.Sorted(maps.Keys(names))
}

// targetNames are the configured targets and those with queued deliveries.
func (m *Monitor) targetNames(f figures) []string {
	names := map[string]bool{}
	for _, t := range m.cfg.Targets {
		names[t] = true
	}
	for t := range f.queues {
		names[t] = true
	}
	return slices.Sorted(maps.Keys(names))
}

// verdicts judges every alarm that is on.
func (m *Monitor) verdicts(f figures, now time.Time) []verdict {
	var out []verdict
	if m.cfg.DuplicateRate > 0 {
		for _, s := range m.sourceNames(f) {
			c := f.sources[s]
			rate, total := duplicateRate(c)
			out = append(out, verdict{DuplicateRate, s, rate, m.cfg.DuplicateRate,
				total >= int64(m.cfg.MinVolume) && rate > m.cfg.DuplicateRate})
		}
	}
	for _, t := range m.targetNames(f) {
		if m.cfg.OldestQueued > 0 {
			age := queuedAge(f.queues[t], now)
			out = append(out, verdict{OldestQueued, t, age.Seconds(), m.cfg.OldestQueued.Seconds(), age > m.cfg.OldestQueued})
		}
		if !slices.Contains(m.cfg.Targets, t) {
			continue // an unknown target's deliveries go dead at their next attempt
		}
		if m.cfg.ReceiveToDoneP99 > 0 {
			l := f.latency[t]
			out = append(out, verdict{ReceiveToDone, t, l.P99.Seconds(), m.cfg.ReceiveToDoneP99.Seconds(), l.Done > 0 && l.P99 > m.cfg.ReceiveToDoneP99})
		}
		if m.cfg.TargetFailing > 0 {
			n := f.streak[t]
			out = append(out, verdict{TargetFailing, t, float64(n), float64(m.cfg.TargetFailing), n >= m.cfg.TargetFailing})
		}
	}
	for _, s := range m.cfg.Sources {
		if s.Silence > 0 {
			quiet := now.Sub(f.last[s.Name])
			out = append(out, verdict{Silence, s.Name, quiet.Seconds(), s.Silence.Seconds(), quiet >= s.Silence})
		}
	}
	return out
}

// keepSilences measures the silence of a source that never sent from
// when its firing alarm says it began, when that is before this
// process's start: a restart does not end a silence.
func (m *Monitor) keepSilences(f figures, stored []Alarm) {
	for _, a := range stored {
		if a.Kind != Silence || !a.Firing || f.hasLast[a.Subject] {
			continue
		}
		began := a.FiredAt.Add(-time.Duration(a.Value * float64(time.Second)))
		if t, ok := f.last[a.Subject]; ok && began.Before(t) {
			f.last[a.Subject] = began
		}
	}
}

func duplicateRate(c SourceCount) (rate float64, total int64) {
	total = c.Received + c.Duplicates
	if total == 0 {
		return 0, 0
	}
	return float64(c.Duplicates) / float64(total), total
}

func queuedAge(q QueueAge, now time.Time) time.Duration {
	if q.Queued == 0 || q.Oldest.IsZero() {
		return 0
	}
	return max(now.Sub(q.Oldest), 0)
}

// sendDue sends the due notices, each retried with backoff up to MaxTries.
func (m *Monitor) sendDue(ctx context.Context) {
	if m.n == nil || !m.recordAgain(ctx) {
		return
	}
	for ctx.Err() == nil {
		due, err := m.s.DueNotices(ctx, m.cfg.Now(), 16)
		if err != nil {
			if ctx.Err() == nil {
				m.log.Error().Err(err).Msg("read due health notices")
			}
			return
		}
		if len(due) == 0 {
			return
		}
		for _, d := range due {
			err := m.n.Notify(ctx, m.alert(d))
			if ctx.Err() != nil {
				return
			}
			o := NoticeOutcome{ID: d.ID, Err: err, At: m.cfg.Now()}
			outcome := "sent"
			if err != nil {
				outcome = "failed"
				if tries := d.Tries + 1; tries >= m.cfg.MaxTries {
					o.GaveUp = true
					outcome = "given_up"
					m.log.Error().Err(err).Str("alarm", d.Kind).Str("subject", d.Subject).Msg("health alert failed; giving up")
				} else {
					o.Next = o.At.Add(m.cfg.Backoff.Delay(tries))
					m.log.Warn().Err(err).Str("alarm", d.Kind).Str("subject", d.Subject).Msg("health alert failed; will retry")
				}
			}
			if m.cfg.OnOutcome != nil {
				m.cfg.OnOutcome(d.Kind, outcome)
			}
			if err := m.record(ctx, o); err != nil {
				m.log.Error().Err(err).Str("alarm", d.Kind).Str("subject", d.Subject).
					Msg("could not record the health alert's outcome; writing it again before sending more")
				m.unrecorded = append(m.unrecorded, o)
				return
			}
			if err != nil {
				// Later notices of this alarm wait behind this one; the
				// next round starts over from the oldest due.
				break
			}
		}
	}
}

func (m *Monitor) record(ctx context.Context, o NoticeOutcome) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return m.s.RecordNotice(wctx, o)
}

func (m *Monitor) recordAgain(ctx context.Context) bool {
	for len(m.unrecorded) > 0 {
		if err := m.record(ctx, m.unrecorded[0]); err != nil {
			return false
		}
		m.unrecorded = m.unrecorded[1:]
	}
	return true
}

// alert is the document sent for d.
func (m *Monitor) alert(d Notice) queue.Alert {
	a := queue.Alert{Kind: d.Kind, State: queue.Resolved, Alarm: &queue.AlarmAlert{
		Value: d.Value, Bound: d.Bound, Unit: unit(d.Kind), Since: d.FiredAt.UTC(), At: d.At.UTC(),
		Message: message(d.Kind, d.Subject, d.Firing, d.Value, d.Bound, m.cfg.Window),
	}}
	if d.Firing {
		a.State = queue.Firing
	}
	if perSource(d.Kind) {
		a.Source = d.Subject
	} else {
		a.Target = d.Subject
	}
	return a
}

func perSource(kind string) bool { return kind == DuplicateRate || kind == Silence }

// unit is what an alarm's value and bound count.
func unit(kind string) string {
	switch kind {
	case DuplicateRate:
		return "ratio"
	case TargetFailing:
		return "attempts"
	}
	return "seconds"
}

// message says what an alarm's change means, for a person.
func message(kind, subject string, firing bool, value, bound float64, window time.Duration) string {
	secs := func(v float64) string { return human(time.Duration(v * float64(time.Second)).Round(time.Second)) }
	w := human(window)
	switch kind {
	case DuplicateRate:
		if firing {
			return fmt.Sprintf("source %s: %.0f%% of its requests in the last %s were duplicates (bound %.0f%%): the provider is resending, so its requests are answered slowly or the answers are lost", subject, value*100, w, bound*100)
		}
		return fmt.Sprintf("source %s: duplicates back under %.0f%% of its requests in the last %s", subject, bound*100, w)
	case OldestQueued:
		if firing {
			return fmt.Sprintf("target %s: a delivery has waited %s (bound %s)", subject, secs(value), secs(bound))
		}
		return fmt.Sprintf("target %s: no delivery has waited longer than %s", subject, secs(bound))
	case ReceiveToDone:
		if firing {
			return fmt.Sprintf("target %s: p99 from receipt to done %s over the last %s (bound %s)", subject, secs(value), w, secs(bound))
		}
		return fmt.Sprintf("target %s: p99 from receipt to done back under %s", subject, secs(bound))
	case TargetFailing:
		if firing {
			return fmt.Sprintf("target %s: %.0f failed attempts in a row (bound %.0f)", subject, value, bound)
		}
		return fmt.Sprintf("target %s: an attempt succeeded again", subject)
	case Silence:
		if firing {
			return fmt.Sprintf("source %s: no event for %s (bound %s)", subject, secs(value), secs(bound))
		}
		return fmt.Sprintf("source %s: events arrive again", subject)
	}
	return kind + " " + subject
}

// watching says where an alarm that is not firing stands against its
// bound, for the status (the API, the health page): resolved messages are
// for the alerts sent when one clears.
func watching(kind, subject string, value, bound float64, window time.Duration, minVolume int) string {
	secs := func(v float64) string { return human(time.Duration(v * float64(time.Second)).Round(time.Second)) }
	w := human(window)
	switch kind {
	case DuplicateRate:
		return fmt.Sprintf("source %s: %.0f%% of its requests in the last %s were duplicates (fires above %.0f%%, from %d requests)", subject, value*100, w, bound*100, minVolume)
	case OldestQueued:
		if value <= 0 {
			return fmt.Sprintf("target %s: nothing waits (fires when a delivery waits over %s)", subject, secs(bound))
		}
		return fmt.Sprintf("target %s: the oldest delivery has waited %s (fires over %s)", subject, secs(value), secs(bound))
	case ReceiveToDone:
		return fmt.Sprintf("target %s: p99 from receipt to done %s over the last %s (fires over %s)", subject, secs(value), w, secs(bound))
	case TargetFailing:
		return fmt.Sprintf("target %s: %.0f failed attempts in a row (fires at %.0f)", subject, value, bound)
	case Silence:
		return fmt.Sprintf("source %s: last event %s ago (fires after %s without one)", subject, secs(value), secs(bound))
	}
	return kind + " " + subject
}

// human is d as a config writes it: "10m", "1h30m", "90s", "2d".
func human(d time.Duration) string { return config.Duration(d).String() }
