package postgres

import (
	"context"
	"fmt"

	"hookbox/queue"
)

// QueueStats counts queued (paused ones too) and dead deliveries and finds
// the oldest queued one, reading the queued rows (through the due index and
// the paused one) and the dead
// letters: its cost grows with the queue, not with the whole table.
func (db *DB) QueueStats(ctx context.Context) (queue.Stats, error) {
	s := queue.NewStats()
	rows, err := db.pool.Query(ctx, `SELECT status, count(*), min(created_at) FROM deliveries
		WHERE `+dueCondition+` OR status = 'paused' GROUP BY status`)
	if err != nil {
		return s, fmt.Errorf("queue stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var st string
		var n, first int64
		if err := rows.Scan(&st, &n, &first); err != nil {
			return s, fmt.Errorf("queue stats: %w", err)
		}
		s.AddQueued(st, n, fromMS(first))
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("queue stats: %w", err)
	}
	var dead int64
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM dead_letters WHERE revived_at IS NULL`).Scan(&dead); err != nil {
		return s, fmt.Errorf("queue stats: %w", err)
	}
	s.ByStatus[queue.Dead] = dead
	return s, nil
}
