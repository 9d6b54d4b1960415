package postgres

import (
	"context"
	"fmt"
	"time"

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

// waitingCondition names the waiting deliveries, paused ones included:
// the deliveries_due index's condition or the deliveries_paused one's, so
// that the counts read those indexes and never the whole table (done rows
// included).
const waitingCondition = `(` + dueCondition + ` OR status = 'paused')`

// QueueByTarget counts each target's waiting deliveries by status and its
// dead letters not revived, and dates its oldest waiting delivery.
func (db *DB) QueueByTarget(ctx context.Context) (queue.TargetQueue, error) {
	q := queue.TargetQueue{}
	rows, err := db.pool.Query(ctx, `SELECT target, status, count(*), min(created_at) FROM deliveries WHERE `+waitingCondition+` GROUP BY target, status`)
	if err != nil {
		return nil, fmt.Errorf("queue by target: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var target, status string
		var n, first int64
		if err := rows.Scan(&target, &status, &n, &first); err != nil {
			return nil, fmt.Errorf("queue by target: %w", err)
		}
		q.Add(target, status, n, fromMS(first))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("queue by target: %w", err)
	}
	rows.Close()
	dead, err := db.pool.Query(ctx, `SELECT target, count(*) FROM dead_letters WHERE revived_at IS NULL GROUP BY target`)
	if err != nil {
		return nil, fmt.Errorf("queue by target: %w", err)
	}
	defer dead.Close()
	for dead.Next() {
		var target string
		var n int64
		if err := dead.Scan(&target, &n); err != nil {
			return nil, fmt.Errorf("queue by target: %w", err)
		}
		q.Add(target, queue.Dead, n, time.Time{})
	}
	if err := dead.Err(); err != nil {
		return nil, fmt.Errorf("queue by target: %w", err)
	}
	return q, nil
}

// Waiting counts the waiting deliveries (paused ones included): the
// admission budget's figure.
func (db *DB) Waiting(ctx context.Context) (int64, error) {
	var n int64
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE `+waitingCondition).Scan(&n); err != nil {
		return 0, fmt.Errorf("count waiting deliveries: %w", err)
	}
	return n, nil
}
