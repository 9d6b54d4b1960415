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

// QueueStats counts queued and dead deliveries and finds the oldest queued
// one, reading the queued rows (through the due index) and the dead
// letters: its cost grows with the queue, not with the whole table.
func (db *DB) QueueStats(ctx context.Context) (queue.Stats, error) {
	s := queue.NewStats()
	rows, err := db.reader.QueryContext(ctx, `SELECT status, COUNT(*), MIN(created_at) FROM deliveries INDEXED BY deliveries_due
		WHERE `+dueCondition+` GROUP BY status`)
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

// queuedCondition is the deliveries_queued index's partial condition
// (migration 0010), word for word, for INDEXED BY: the waiting deliveries,
// paused ones included.
const queuedCondition = `(status = 'pending' OR status = 'retrying' OR status = 'running' OR status = 'paused')`

// QueueByTarget counts each target's waiting deliveries by status and its
// dead letters not revived, and dates its oldest waiting delivery. The
// waiting ones are read from the deliveries_queued index alone (never the
// table): a million of them take about 0.1 s, on a reader that never
// holds up the writer.
func (db *DB) QueueByTarget(ctx context.Context) (queue.TargetQueue, error) {
	q := queue.TargetQueue{}
	rows, err := db.reader.QueryContext(ctx, `SELECT target, status, count(*), min(created_at) FROM deliveries INDEXED BY deliveries_queued
		WHERE `+queuedCondition+` GROUP BY target, status`)
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
		q.Add(target, status, n, time.UnixMilli(first).UTC())
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("queue by target: %w", err)
	}
	rows.Close()
	dead, err := db.reader.QueryContext(ctx, `SELECT target, count(*) FROM dead_letters WHERE revived_at IS NULL GROUP BY target`)
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

// Waiting counts the waiting deliveries (paused ones included), from the
// deliveries_queued index alone: the admission budget's figure.
func (db *DB) Waiting(ctx context.Context) (int64, error) {
	var n int64
	if err := db.reader.QueryRowContext(ctx, `SELECT count(*) FROM deliveries INDEXED BY deliveries_queued WHERE `+queuedCondition).Scan(&n); err != nil {
		return 0, fmt.Errorf("count waiting deliveries: %w", err)
	}
	return n, nil
}
