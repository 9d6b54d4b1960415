package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/queue"
)

// The alerts are columns of the dead letters: alert_due_at is when a dead
// letter's alert is tried next (NULL once sent, given up, or not needed),
// so an alert survives a crash before it is sent.

// DueAlerts returns up to limit dead letters whose alert is due at now,
// the longest due first.
func (db *DB) DueAlerts(ctx context.Context, now time.Time, limit int) ([]queue.DueAlert, error) {
	rows, err := db.pool.Query(ctx, `SELECT l.id, l.alert_attempts, e.source, e.event_id, e.type, l.target, l.attempts, l.error, l.dead_at, l.event
		FROM dead_letters l JOIN events e ON e.id = l.event
		WHERE l.alert_due_at IS NOT NULL AND l.alert_due_at <= $1 ORDER BY l.alert_due_at, l.id LIMIT $2`, ms(now), limit)
	if err != nil {
		return nil, fmt.Errorf("due alerts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (queue.DueAlert, error) {
		var d queue.DueAlert
		var deadAt int64
		err := row.Scan(&d.Letter, &d.Tries, &d.Source, &d.EventID, &d.Type, &d.Target, &d.Attempts, &d.Error, &deadAt, &d.Event)
		d.DeadAt = fromMS(deadAt)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("due alerts: %w", err)
	}
	return out, nil
}

// RecordAlert records the outcome of one send of a dead letter's alert:
// sent, given up, or due again at o.Next (unless the dead letter was
// revived meanwhile: then it needs no alert any more).
func (db *DB) RecordAlert(ctx context.Context, o queue.AlertOutcome) error {
	return db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		switch {
		case o.Err == nil:
			_, err = tx.Exec(ctx, `UPDATE dead_letters SET alert_attempts = alert_attempts + 1, alert_due_at = NULL, alerted_at = $1, alert_error = '' WHERE id = $2`, ms(o.At), o.Letter)
		case o.GaveUp:
			_, err = tx.Exec(ctx, `UPDATE dead_letters SET alert_attempts = alert_attempts + 1, alert_due_at = NULL, alert_error = $1 WHERE id = $2`, o.Err.Error(), o.Letter)
		default:
			_, err = tx.Exec(ctx, `UPDATE dead_letters SET alert_attempts = alert_attempts + 1,
				alert_due_at = CASE WHEN revived_at IS NULL THEN $1::bigint END, alert_error = $2 WHERE id = $3`, ms(o.Next), o.Err.Error(), o.Letter)
		}
		return err
	})
}
