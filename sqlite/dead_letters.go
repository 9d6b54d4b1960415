package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"hookbox/queue"
)

const (
	// deadLetterSQL keeps a delivery that went dead (completeFn), with its
	// alert due, or none (NULL) without [alert].
	deadLetterSQL = `INSERT INTO dead_letters (delivery, event, target, attempts, error, dead_at, alert_due_at) VALUES (?, ?, ?, ?, ?, ?, ?)`
	// reviveLettersSQL marks dead letters revived: their delivery is queued
	// again (a redelivery, a replay), and needs no alert any more.
	reviveLettersSQL = `UPDATE dead_letters SET revived_at = ?, alert_due_at = NULL`
)

// DeadLetters lists dead letters, newest first, at most limit of them (0:
// all). With all false, revived ones are left out.
func (db *DB) DeadLetters(ctx context.Context, all bool, limit int) ([]queue.DeadLetter, error) {
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
	rows, err := db.reader.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	defer rows.Close()
	var out []queue.DeadLetter
	for rows.Next() {
		var d queue.DeadLetter
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
