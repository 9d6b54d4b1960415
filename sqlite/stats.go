package sqlite

import (
	"context"
	"database/sql"
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

// queueByTargetSQL is the metrics' one read of the store: each target's
// waiting deliveries by status, and its oldest, through the due and the
// paused indexes (each row's target and status read from the table), and
// the dead letters not revived. Its cost grows with the queue, about a
// second for a million waiting (metrics.QueueCollector answers from the
// last read while a slow one runs); no index written with every delivery
// serves it (migration 0011).
const queueByTargetSQL = `SELECT target, status, count(*), min(created_at) FROM deliveries INDEXED BY deliveries_due
		WHERE ` + dueCondition + ` GROUP BY target, status
	UNION ALL
	SELECT target, 'paused', count(*), min(created_at) FROM deliveries INDEXED BY deliveries_paused
		WHERE status = 'paused' GROUP BY target
	UNION ALL
	SELECT target, 'dead', count(*), NULL FROM dead_letters WHERE revived_at IS NULL GROUP BY target`

// QueueByTarget counts each target's waiting deliveries by status and its
// dead letters not revived, and dates its oldest waiting delivery, in one
// statement on a reader: it never holds up the writer.
func (db *DB) QueueByTarget(ctx context.Context) (queue.TargetQueue, error) {
	q := queue.TargetQueue{}
	rows, err := db.reader.QueryContext(ctx, queueByTargetSQL)
	if err != nil {
		return nil, fmt.Errorf("queue by target: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var target, status string
		var n int64
		var first sql.NullInt64
		if err := rows.Scan(&target, &status, &n, &first); err != nil {
			return nil, fmt.Errorf("queue by target: %w", err)
		}
		oldest := time.Time{}
		if first.Valid {
			oldest = time.UnixMilli(first.Int64).UTC()
		}
		q.Add(target, status, n, oldest)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("queue by target: %w", err)
	}
	return q, nil
}

// queueWaitingSQL counts the waiting deliveries through the due and the paused
// indexes alone.
const queueWaitingSQL = `SELECT (SELECT count(*) FROM deliveries INDEXED BY deliveries_due WHERE ` + dueCondition + `)
		+ (SELECT count(*) FROM deliveries INDEXED BY deliveries_paused WHERE status = 'paused')`

// Waiting counts the waiting deliveries (paused ones included): the
// admission budget's figure, from the due and the paused indexes alone.
func (db *DB) Waiting(ctx context.Context) (int64, error) {
	var n int64
	if err := db.reader.QueryRowContext(ctx, queueWaitingSQL).Scan(&n); err != nil {
		return 0, fmt.Errorf("count waiting deliveries: %w", err)
	}
	return n, nil
}
