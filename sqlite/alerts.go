package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"hookbox/queue"
)

// The alerts are columns of the dead letters: alert_due_at is when a dead
// letter's alert is tried next (NULL once sent, given up, or not needed),
// so an alert survives a crash before it is sent.

// DueAlerts returns up to limit dead letters whose alert is due at now,
// the longest due first.
func (db *DB) DueAlerts(ctx context.Context, now time.Time, limit int) ([]queue.DueAlert, error) {
	rows, err := db.reader.QueryContext(ctx, `SELECT l.id, l.alert_attempts, e.source, e.event_id, e.type, l.target, l.attempts, l.error, l.dead_at, l.event
		FROM dead_letters l JOIN events e ON e.id = l.event
		WHERE l.alert_due_at IS NOT NULL AND l.alert_due_at <= ? ORDER BY l.alert_due_at LIMIT ?`, now.UnixMilli(), limit)
	if err != nil {
		return nil, fmt.Errorf("due alerts: %w", err)
	}
	defer rows.Close()
	var out []queue.DueAlert
	for rows.Next() {
		var d queue.DueAlert
		var deadAt int64
		if err := rows.Scan(&d.Letter, &d.Tries, &d.Source, &d.EventID, &d.Type, &d.Target, &d.Attempts, &d.Error, &deadAt, &d.Event); err != nil {
			return nil, fmt.Errorf("due alerts: %w", err)
		}
		d.DeadAt = time.UnixMilli(deadAt).UTC()
		out = append(out, d)
	}
	return out, rows.Err()
}

// RecordAlert records the outcome of one send of a dead letter's alert:
// sent, given up, or due again at o.Next (unless the dead letter was
// revived meanwhile: then it needs no alert any more).
func (db *DB) RecordAlert(ctx context.Context, o queue.AlertOutcome) error {
	return db.w.write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see writer.write
		var err error
		switch {
		case o.Err == nil:
			_, err = tx.ExecContext(ctx, `UPDATE dead_letters SET alert_attempts = alert_attempts + 1, alert_due_at = NULL, alerted_at = ?, alert_error = '' WHERE id = ?`, o.At.UnixMilli(), o.Letter)
		case o.GaveUp:
			_, err = tx.ExecContext(ctx, `UPDATE dead_letters SET alert_attempts = alert_attempts + 1, alert_due_at = NULL, alert_error = ? WHERE id = ?`, o.Err.Error(), o.Letter)
		default:
			// A dead letter revived (redelivered, replayed) while its alert
			// was on its way needs no alert any more.
			_, err = tx.ExecContext(ctx, `UPDATE dead_letters SET alert_attempts = alert_attempts + 1,
				alert_due_at = CASE WHEN revived_at IS NULL THEN ? END, alert_error = ? WHERE id = ?`, o.Next.UnixMilli(), o.Err.Error(), o.Letter)
		}
		return err
	})
}
