package sqlite

import (
	"context"
	"fmt"
	"time"

	"hookbox/queue"
)

// Stats returns the writer's commit counters: writes ÷ commits is how many
// writes share each commit and its fsync.
func (db *DB) Stats() Stats { return db.w.counts() }

// QueueStats counts queued (paused ones too) and dead deliveries and finds
// the oldest queued one, reading the queued rows (through the due index and
// the paused one) and the dead
// letters: its cost grows with the queue, not with the whole table.
func (db *DB) QueueStats(ctx context.Context) (queue.Stats, error) {
	s := queue.NewStats()
	rows, err := db.reader.QueryContext(ctx, `SELECT status, COUNT(*), MIN(created_at) FROM deliveries INDEXED BY deliveries_due
		WHERE `+dueCondition+` GROUP BY status
		UNION ALL SELECT 'paused', COUNT(*), MIN(created_at) FROM deliveries INDEXED BY deliveries_paused WHERE status = 'paused' HAVING COUNT(*) > 0`)
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
		s.AddQueued(st, n, time.UnixMilli(first).UTC())
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("queue stats: %w", err)
	}
	var dead int64
	if err := db.reader.QueryRowContext(ctx, `SELECT COUNT(*) FROM dead_letters WHERE revived_at IS NULL`).Scan(&dead); err != nil {
		return s, fmt.Errorf("queue stats: %w", err)
	}
	s.ByStatus[queue.Dead] = dead
	return s, nil
}
