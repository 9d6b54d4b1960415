package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"hookbox/queue"
)

const (
	// deadLetterSQL keeps a delivery that went dead (completeFn), with its
	// alert due, or none (NULL) without [alert].
	deadLetterSQL = `INSERT INTO dead_letters (delivery, event, target, attempts, error, dead_at, alert_due_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`
	// reviveLettersSet marks dead letters revived: their delivery is
	// queued again (a redelivery, a replay), and needs no alert any more.
	// $1 is now.
	reviveLettersSet = `UPDATE dead_letters SET revived_at = $1, alert_due_at = NULL`
)

// DeadLetters lists dead letters, newest first, at most limit of them (0:
// all). With all false, revived ones are left out.
func (db *DB) DeadLetters(ctx context.Context, all bool, limit int) ([]queue.DeadLetter, error) {
	var a args
	query := `SELECT l.id, l.delivery, l.event, e.source, e.event_id, e.type, l.target, l.attempts, l.error, l.dead_at, l.revived_at, l.alerted_at, l.alert_error, l.alert_due_at, l.alert_attempts
		FROM dead_letters l JOIN events e ON e.id = l.event`
	if !all {
		query += ` WHERE l.revived_at IS NULL`
	}
	query += ` ORDER BY l.id DESC`
	if limit > 0 {
		query += ` LIMIT ` + a.add(limit)
	}
	rows, err := db.pool.Query(ctx, query, a...)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (queue.DeadLetter, error) {
		var d queue.DeadLetter
		var dead int64
		var revived, alerted, due *int64
		err := row.Scan(&d.ID, &d.Delivery, &d.Event, &d.Source, &d.EventID, &d.Type, &d.Target, &d.Attempts, &d.Error,
			&dead, &revived, &alerted, &d.AlertErr, &due, &d.AlertTries)
		d.DeadAt, d.RevivedAt, d.AlertedAt, d.AlertDueAt = fromMS(dead), fromNullMS(revived), fromNullMS(alerted), fromNullMS(due)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	return out, nil
}
