package queue

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"hookbox/store"
)

// Delivery is a delivery row as shown to users.
type Delivery struct {
	ID        int64
	Event     int64
	Target    string
	Status    string
	Attempts  int
	LastError string
	// DeadReason says why a dead delivery went dead before it had spent
	// its attempts ("permanent: exit 65", "payload removed by retention"),
	// or is "".
	DeadReason string
	RunAt      time.Time // next attempt (pending, retrying) or lease expiry (running)
	CreatedAt  time.Time
	DoneAt     time.Time // zero unless done or dead
}

// Deliveries returns the deliveries of the given events, keyed by event.
func (q *Queue) Deliveries(ctx context.Context, events []int64) (map[int64][]Delivery, error) {
	out := make(map[int64][]Delivery, len(events))
	for start := 0; start < len(events); start += 500 {
		chunk := events[start:min(start+500, len(events))]
		args := make([]any, len(chunk))
		for i, e := range chunk {
			args[i] = e
		}
		rows, err := q.db.Reader().QueryContext(ctx, `SELECT id, event, target, status, attempts, last_error, dead_reason, run_at, created_at, done_at
			FROM deliveries WHERE event IN (?`+strings.Repeat(",?", len(chunk)-1)+`) ORDER BY id`, args...)
		if err != nil {
			return nil, fmt.Errorf("list deliveries: %w", err)
		}
		for rows.Next() {
			var d Delivery
			var runAt, created int64
			var done sql.NullInt64
			if err := rows.Scan(&d.ID, &d.Event, &d.Target, &d.Status, &d.Attempts, &d.LastError, &d.DeadReason, &runAt, &created, &done); err != nil {
				rows.Close()
				return nil, fmt.Errorf("list deliveries: %w", err)
			}
			d.RunAt, d.CreatedAt = time.UnixMilli(runAt).UTC(), time.UnixMilli(created).UTC()
			if done.Valid {
				d.DoneAt = time.UnixMilli(done.Int64).UTC()
			}
			out[d.Event] = append(out[d.Event], d)
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("list deliveries: %w", err)
		}
	}
	return out, nil
}

// Attempts returns every recorded attempt of a delivery, oldest first.
func (q *Queue) Attempts(ctx context.Context, delivery int64) ([]Attempt, error) {
	rows, err := q.db.Reader().QueryContext(ctx, `SELECT attempt, started_at, duration_us, outcome, http_status, exit_code, error, output
		FROM attempts WHERE delivery = ? ORDER BY id`, delivery)
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	defer rows.Close()
	var out []Attempt
	for rows.Next() {
		var a Attempt
		var started, dur int64
		var status, exit sql.NullInt64
		if err := rows.Scan(&a.Number, &started, &dur, &a.Outcome, &status, &exit, &a.Error, &a.Output); err != nil {
			return nil, fmt.Errorf("list attempts: %w", err)
		}
		a.StartedAt = time.UnixMilli(started).UTC()
		a.Duration = time.Duration(dur) * time.Microsecond
		a.HTTPStatus = int(status.Int64)
		if exit.Valid {
			c := int(exit.Int64)
			a.ExitCode = &c
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// AttemptSpan returns when the first recorded attempt started and when the
// last one ended, or ok false if none is recorded.
func (q *Queue) AttemptSpan(ctx context.Context) (first, last time.Time, ok bool, err error) {
	var startMS, endUS sql.NullInt64
	err = q.db.Reader().QueryRowContext(ctx, `SELECT MIN(started_at), MAX(started_at * 1000 + duration_us) FROM attempts`).Scan(&startMS, &endUS)
	if err != nil {
		return first, last, false, fmt.Errorf("read attempt times: %w", err)
	}
	if !startMS.Valid {
		return first, last, false, nil
	}
	return time.UnixMilli(startMS.Int64), time.UnixMicro(endUS.Int64), true, nil
}

// DeadLetter is a row of the dead-letter table.
type DeadLetter struct {
	ID        int64
	Delivery  int64
	Event     int64
	Source    string
	EventID   string
	Type      string
	Target    string
	Attempts  int
	Error     string
	DeadAt    time.Time
	RevivedAt time.Time // zero unless a redelivery or replay revived it
	AlertedAt time.Time // zero unless the alert was sent
	AlertErr  string    // the last failed send's error
	// AlertDueAt is when the alert is tried next: zero once it was sent,
	// given up (AlertErr says why) or, for a revived letter, not needed.
	AlertDueAt time.Time
	AlertTries int // sends tried so far
}

// DeadLetters lists dead letters, newest first. With all false, revived ones are left out.
func (q *Queue) DeadLetters(ctx context.Context, all bool, limit int) ([]DeadLetter, error) {
	query := `SELECT l.id, l.delivery, l.event, e.source, e.event_id, e.type, l.target, l.attempts, l.error, l.dead_at, l.revived_at, l.alerted_at, l.alert_error, l.alert_due_at, l.alert_attempts
		FROM dead_letters l JOIN events e ON e.id = l.event`
	if !all {
		query += ` WHERE l.revived_at IS NULL`
	}
	query += ` ORDER BY l.id DESC`
	var args []any
	if limit > 0 {
		query += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := q.db.Reader().QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	defer rows.Close()
	var out []DeadLetter
	for rows.Next() {
		var d DeadLetter
		var dead int64
		var revived, alerted, due sql.NullInt64
		if err := rows.Scan(&d.ID, &d.Delivery, &d.Event, &d.Source, &d.EventID, &d.Type, &d.Target, &d.Attempts, &d.Error,
			&dead, &revived, &alerted, &d.AlertErr, &due, &d.AlertTries); err != nil {
			return nil, fmt.Errorf("list dead letters: %w", err)
		}
		d.DeadAt = time.UnixMilli(dead).UTC()
		if revived.Valid {
			d.RevivedAt = time.UnixMilli(revived.Int64).UTC()
		}
		if alerted.Valid {
			d.AlertedAt = time.UnixMilli(alerted.Int64).UTC()
		}
		if due.Valid {
			d.AlertDueAt = time.UnixMilli(due.Int64).UTC()
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// Stats are queue figures for metrics.
type Stats struct {
	// ByStatus counts pending, running, retrying and dead deliveries. Done
	// ones are not counted: that would read the whole table on every
	// scrape (the metrics count successes as they happen instead).
	ByStatus     map[string]int64
	OldestQueued time.Time // creation of the oldest queued delivery; zero if none
}

// Stats counts queued and dead deliveries and finds the oldest queued one,
// reading the queued rows (through the due index) and the dead letters:
// its cost grows with the queue, not with the whole table.
func (q *Queue) Stats(ctx context.Context) (Stats, error) {
	s := Stats{ByStatus: map[string]int64{Pending: 0, Running: 0, Retrying: 0, Dead: 0}}
	rows, err := q.db.Reader().QueryContext(ctx, `SELECT status, COUNT(*), MIN(created_at) FROM deliveries INDEXED BY deliveries_due
		WHERE `+store.DueCondition+` GROUP BY status`)
	if err != nil {
		return s, fmt.Errorf("queue stats: %w", err)
	}
	defer rows.Close()
	var oldest int64
	for rows.Next() {
		var st string
		var n, first int64
		if err := rows.Scan(&st, &n, &first); err != nil {
			return s, fmt.Errorf("queue stats: %w", err)
		}
		s.ByStatus[st] = n
		if oldest == 0 || first < oldest {
			oldest = first
		}
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("queue stats: %w", err)
	}
	if oldest != 0 {
		s.OldestQueued = time.UnixMilli(oldest).UTC()
	}
	var dead int64
	if err := q.db.Reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM dead_letters WHERE revived_at IS NULL`).Scan(&dead); err != nil {
		return s, fmt.Errorf("queue stats: %w", err)
	}
	s.ByStatus[Dead] = dead
	return s, nil
}

// WarnUnknownTargets logs the targets that queued deliveries are for but
// known (the config's targets) no longer has, renamed or removed since they
// were queued: each goes dead at its next attempt.
func (q *Queue) WarnUnknownTargets(ctx context.Context, known []string, log zerolog.Logger) {
	queued, err := q.QueuedByTarget(ctx)
	if err != nil {
		log.Warn().Err(err).Msg("could not count queued deliveries by target")
		return
	}
	for _, name := range slices.Sorted(maps.Keys(queued)) {
		if slices.Contains(known, name) {
			continue
		}
		log.Warn().Str("target", name).Int64("deliveries", queued[name]).
			Msg("queued deliveries are for a target the config no longer names: each goes dead at its next attempt; put the target back and run hookbox replay --dead to deliver them")
	}
}
