package queue

import (
	"context"
	"encoding/json"
	"time"

	"github.com/rs/zerolog"
)

// Alert is the JSON document sent once for each delivery that goes dead,
// and for each health alarm when it fires and when it resolves.
type Alert struct {
	// Kind is "dead" for a dead delivery (also when left empty), else the
	// health alarm's name (duplicate_rate, oldest_queued, …); State is
	// "firing" (always, for a dead delivery) or "resolved".
	Kind     string    `json:"kind"`
	State    string    `json:"state"`
	Source   string    `json:"source"`
	EventID  string    `json:"event_id"`
	Type     string    `json:"type"`
	Target   string    `json:"target"`
	Attempts int       `json:"attempts"`
	Error    string    `json:"error"`
	DeadAt   time.Time `json:"dead_at"`
	Event    int64     `json:"event"` // hookbox's row id, for `hookbox event ID`
	// Alarm holds a health alarm's figures; nil for a dead delivery. A
	// health alarm's document has kind, state, the source or the target
	// it is about, and these.
	Alarm *AlarmAlert `json:"-"`
}

// Alert kinds and states.
const (
	KindDead = "dead"
	Firing   = "firing"
	Resolved = "resolved"
)

// AlarmAlert is what a health alarm's alert says beyond its kind and state.
type AlarmAlert struct {
	Value   float64   `json:"value"`   // the figure that crossed its bound (or, resolved, no longer does)
	Bound   float64   `json:"bound"`   // the configured bound
	Unit    string    `json:"unit"`    // of value and bound: "ratio", "seconds" or "attempts"
	Since   time.Time `json:"since"`   // when the alarm began firing
	At      time.Time `json:"at"`      // when it entered this state
	Message string    `json:"message"` // for a person
}

// MarshalJSON writes a dead delivery's alert with every field it has had,
// plus kind and state; a health alarm's without the dead delivery's fields.
func (a Alert) MarshalJSON() ([]byte, error) {
	if a.Alarm != nil {
		return json.Marshal(struct {
			Kind   string `json:"kind"`
			State  string `json:"state"`
			Source string `json:"source,omitempty"`
			Target string `json:"target,omitempty"`
			*AlarmAlert
		}{a.Kind, a.State, a.Source, a.Target, a.Alarm})
	}
	type dead Alert // without this method
	d := dead(a)
	if d.Kind == "" {
		d.Kind = KindDead
	}
	if d.State == "" {
		d.State = Firing
	}
	return json.Marshal(d)
}

// AlertStore is what the alerter needs of a store engine: the dead
// letters whose alert is due, and a place to record each send's outcome.
type AlertStore interface {
	// DueAlerts returns up to limit alerts due at now, the longest due
	// first.
	DueAlerts(ctx context.Context, now time.Time, limit int) ([]DueAlert, error)
	// RecordAlert records one send's outcome, once durable; a dead letter
	// revived meanwhile is not due again after a failure.
	RecordAlert(ctx context.Context, o AlertOutcome) error
}

// DueAlert is the alert of one dead letter, due to be sent.
type DueAlert struct {
	Alert
	Letter int64 // the dead letter's id
	Tries  int   // sends tried so far
}

// AlertOutcome is the result of one send of a dead letter's alert.
type AlertOutcome struct {
	Letter int64
	Err    error     // nil: sent
	Next   time.Time // with Err: when to try again, unless GaveUp
	GaveUp bool      // with Err: that was the last try
	At     time.Time // when the send ended
}

// Notifier sends one alert; an error means it should be tried again.
type Notifier interface {
	Notify(ctx context.Context, a Alert) error
}

// Alerter sends queued alerts from the dead_letters table. Alerts are
// durable: a crash before sending leaves them due, so they go out after the
// restart. Each is tried up to MaxTries times with growing waits.
type Alerter struct {
	s        AlertStore
	n        Notifier
	log      zerolog.Logger
	now      func() time.Time
	MaxTries int
	// Backoff is the wait after each failed try (by default 5s, doubling,
	// uncapped: with 5 tries the last wait is 40s).
	Backoff Backoff
	// OnOutcome, if set, is told of each send: the alert's kind and
	// "sent", "failed" (tried again later) or "given_up".
	OnOutcome func(kind, outcome string)

	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}

	// Outcomes of sent alerts that the store did not take (a full disk),
	// written again before anything else is sent: the alert stays due in
	// the store meanwhile, and sending it again would repeat it. Only the
	// loop's goroutine uses it.
	unrecorded []AlertOutcome
}

// NewAlerter returns an alerter sending the due alerts of s through n.
func NewAlerter(s AlertStore, n Notifier, log zerolog.Logger, now func() time.Time) *Alerter {
	if now == nil {
		now = time.Now
	}
	return &Alerter{s: s, n: n, log: log, now: now, MaxTries: 5, Backoff: Backoff{Base: 5 * time.Second}, wake: make(chan struct{}, 1)}
}

// Wake asks the alerter to look for due alerts now. It never blocks.
func (a *Alerter) Wake() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Start runs the alert loop until Stop.
func (a *Alerter) Start(ctx context.Context) {
	ctx, a.cancel = context.WithCancel(ctx)
	a.done = make(chan struct{})
	go func() {
		defer close(a.done)
		ticker := time.NewTicker(time.Second)
		defer ticker.Stop()
		for {
			a.sendDue(ctx)
			select {
			case <-ctx.Done():
				return
			case <-a.wake:
			case <-ticker.C:
			}
		}
	}()
}

// Stop ends the loop; unsent alerts stay due for the next start.
func (a *Alerter) Stop() {
	if a.cancel != nil {
		a.cancel()
		<-a.done
	}
}

func (a *Alerter) sendDue(ctx context.Context) {
	if !a.recordAgain(ctx) {
		return // the next tick tries again
	}
	for ctx.Err() == nil {
		due, err := a.s.DueAlerts(ctx, a.now(), 16)
		if err != nil {
			if ctx.Err() == nil {
				a.log.Error().Err(err).Msg("read due alerts")
			}
			return
		}
		if len(due) == 0 {
			return
		}
		for _, d := range due {
			// No limit of its own: the notifier keeps the configured
			// [alert] timeout, which may be longer than any default here.
			err := a.n.Notify(ctx, d.Alert)
			if ctx.Err() != nil {
				return
			}
			next, gaveUp := time.Time{}, false
			if err != nil {
				tries := d.Tries + 1
				if tries >= a.MaxTries {
					gaveUp = true
					a.log.Error().Err(err).Int64("event", d.Event).Str("target", d.Target).Msg("alert failed; giving up")
				} else {
					next = a.now().Add(a.Backoff.Delay(tries))
					a.log.Warn().Err(err).Int64("event", d.Event).Str("target", d.Target).Msg("alert failed; will retry")
				}
			}
			a.outcome(err, gaveUp)
			o := AlertOutcome{Letter: d.Letter, Err: err, Next: next, GaveUp: gaveUp, At: a.now()}
			if err := a.record(ctx, o); err != nil {
				a.log.Error().Err(err).Int64("event", d.Event).Str("target", d.Target).
					Msg("could not record the alert's outcome; writing it again before sending more")
				a.unrecorded = append(a.unrecorded, o)
				return
			}
		}
	}
}

// outcome tells OnOutcome how a send of a dead letter's alert went.
func (a *Alerter) outcome(err error, gaveUp bool) {
	if a.OnOutcome == nil {
		return
	}
	switch {
	case err == nil:
		a.OnOutcome("dead", "sent")
	case gaveUp:
		a.OnOutcome("dead", "given_up")
	default:
		a.OnOutcome("dead", "failed")
	}
}

func (a *Alerter) record(ctx context.Context, o AlertOutcome) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return a.s.RecordAlert(wctx, o)
}

// recordAgain writes the outcomes the store refused before, and reports
// whether all are in. A stop loses them: those alerts are due again at the
// next start and are sent once more.
func (a *Alerter) recordAgain(ctx context.Context) bool {
	for len(a.unrecorded) > 0 {
		if err := a.record(ctx, a.unrecorded[0]); err != nil {
			return false
		}
		a.log.Info().Msg("recorded an alert's outcome that the store refused before")
		a.unrecorded = a.unrecorded[1:]
	}
	return true
}
