package queue

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

// Alert is the JSON document sent once for each delivery that goes dead.
type Alert struct {
	Source   string    `json:"source"`
	EventID  string    `json:"event_id"`
	Type     string    `json:"type"`
	Target   string    `json:"target"`
	Attempts int       `json:"attempts"`
	Error    string    `json:"error"`
	DeadAt   time.Time `json:"dead_at"`
	Event    int64     `json:"event"` // hookbox's row id, for `hookbox event ID`
}

// Notifier sends one alert; an error means it should be tried again.
type Notifier interface {
	Notify(ctx context.Context, a Alert) error
}

// Alerter sends queued alerts from the dead_letters table. Alerts are
// durable: a crash before sending leaves them due, so they go out after the
// restart. Each is tried up to MaxTries times with growing waits.
type Alerter struct {
	q        *Queue
	n        Notifier
	log      zerolog.Logger
	now      func() time.Time
	MaxTries int
	// Backoff is the wait after each failed try (by default 5s, doubling,
	// uncapped: with 5 tries the last wait is 40s).
	Backoff Backoff

	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}

	// Outcomes of sent alerts that the store did not take (a full disk),
	// written again before anything else is sent: the alert stays due in
	// the store meanwhile, and sending it again would repeat it. Only the
	// loop's goroutine uses it.
	unrecorded []outcome
}

// outcome is the result of one send, as recordAlert writes it.
type outcome struct {
	id     int64
	err    error
	next   time.Time
	gaveUp bool
	at     time.Time
}

// NewAlerter returns an alerter sending through n.
func NewAlerter(q *Queue, n Notifier, log zerolog.Logger, now func() time.Time) *Alerter {
	if now == nil {
		now = time.Now
	}
	return &Alerter{q: q, n: n, log: log, now: now, MaxTries: 5, Backoff: Backoff{Base: 5 * time.Second}, wake: make(chan struct{}, 1)}
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
		due, err := a.q.dueAlerts(ctx, a.now(), 16)
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
				tries := d.tries + 1
				if tries >= a.MaxTries {
					gaveUp = true
					a.log.Error().Err(err).Int64("event", d.Event).Str("target", d.Target).Msg("alert failed; giving up")
				} else {
					next = a.now().Add(a.Backoff.Delay(tries))
					a.log.Warn().Err(err).Int64("event", d.Event).Str("target", d.Target).Msg("alert failed; will retry")
				}
			}
			o := outcome{id: d.id, err: err, next: next, gaveUp: gaveUp, at: a.now()}
			if err := a.record(ctx, o); err != nil {
				a.log.Error().Err(err).Int64("event", d.Event).Str("target", d.Target).
					Msg("could not record the alert's outcome; writing it again before sending more")
				a.unrecorded = append(a.unrecorded, o)
				return
			}
		}
	}
}

func (a *Alerter) record(ctx context.Context, o outcome) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return a.q.recordAlert(wctx, o.id, o.err, o.next, o.gaveUp, o.at)
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

type dueAlert struct {
	Alert
	id    int64
	tries int
}

func (q *Queue) dueAlerts(ctx context.Context, now time.Time, limit int) ([]dueAlert, error) {
	rows, err := q.db.Reader().QueryContext(ctx, `SELECT l.id, l.alert_attempts, e.source, e.event_id, e.type, l.target, l.attempts, l.error, l.dead_at, l.event
		FROM dead_letters l JOIN events e ON e.id = l.event
		WHERE l.alert_due_at IS NOT NULL AND l.alert_due_at <= ? ORDER BY l.alert_due_at LIMIT ?`, now.UnixMilli(), limit)
	if err != nil {
		return nil, fmt.Errorf("due alerts: %w", err)
	}
	defer rows.Close()
	var out []dueAlert
	for rows.Next() {
		var d dueAlert
		var deadAt int64
		if err := rows.Scan(&d.id, &d.tries, &d.Source, &d.EventID, &d.Type, &d.Target, &d.Attempts, &d.Error, &deadAt, &d.Event); err != nil {
			return nil, fmt.Errorf("due alerts: %w", err)
		}
		d.DeadAt = time.UnixMilli(deadAt).UTC()
		out = append(out, d)
	}
	return out, rows.Err()
}

func (q *Queue) recordAlert(ctx context.Context, id int64, sendErr error, next time.Time, gaveUp bool, now time.Time) error {
	return q.db.Write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see store.Write
		var err error
		switch {
		case sendErr == nil:
			_, err = tx.ExecContext(ctx, `UPDATE dead_letters SET alert_attempts = alert_attempts + 1, alert_due_at = NULL, alerted_at = ?, alert_error = '' WHERE id = ?`, now.UnixMilli(), id)
		case gaveUp:
			_, err = tx.ExecContext(ctx, `UPDATE dead_letters SET alert_attempts = alert_attempts + 1, alert_due_at = NULL, alert_error = ? WHERE id = ?`, sendErr.Error(), id)
		default:
			// A dead letter revived (redelivered, replayed) while its alert
			// was on its way needs no alert any more.
			_, err = tx.ExecContext(ctx, `UPDATE dead_letters SET alert_attempts = alert_attempts + 1,
				alert_due_at = CASE WHEN revived_at IS NULL THEN ? END, alert_error = ? WHERE id = ?`, next.UnixMilli(), sendErr.Error(), id)
		}
		return err
	})
}
