package queue

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// BackfillSelector chooses the events Backfill gives a delivery to.
type BackfillSelector struct {
	Target string
	Event  int64     // one event, or 0 for the period
	Since  time.Time // received at or after (zero: no bound)
	Until  time.Time // received before (zero: no bound)
	// Matches says whether the target takes an event of source and type
	// (its source(s) and events patterns).
	Matches func(source, typ string) bool
}

// Backfilled is what Backfill did.
type Backfilled struct {
	Queued int64 // deliveries created
	Swept  int64 // matching events left out: their payload was removed by retention
}

// Backfill queues a delivery to sel.Target for each selected event that
// matches it and has none for it: the events received before a target was
// added or renamed. It chooses on a read connection and writes in batches;
// an event that got its delivery meanwhile is left as it is (UNIQUE
// (event, target)).
func (q *Queue) Backfill(ctx context.Context, sel BackfillSelector, now time.Time) (Backfilled, error) {
	query := `SELECT e.id, e.source, e.type, e.swept_at IS NOT NULL FROM events e
		WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event = e.id AND d.target = ?)`
	args := []any{sel.Target}
	if sel.Event > 0 {
		query += ` AND e.id = ?`
		args = append(args, sel.Event)
	}
	if !sel.Since.IsZero() {
		query += ` AND e.received_at >= ?`
		args = append(args, sel.Since.UnixMilli())
	}
	if !sel.Until.IsZero() {
		query += ` AND e.received_at < ?`
		args = append(args, sel.Until.UnixMilli())
	}
	rows, err := q.db.Reader().QueryContext(ctx, query+` ORDER BY e.id`, args...)
	if err != nil {
		return Backfilled{}, fmt.Errorf("backfill %s: %w", sel.Target, err)
	}
	var r Backfilled
	var ids []int64
	for rows.Next() {
		var id int64
		var source, typ string
		var swept bool
		if err := rows.Scan(&id, &source, &typ, &swept); err != nil {
			rows.Close()
			return Backfilled{}, fmt.Errorf("backfill %s: %w", sel.Target, err)
		}
		switch {
		case !sel.Matches(source, typ):
		case swept:
			r.Swept++
		default:
			ids = append(ids, id)
		}
	}
	if err := rows.Close(); err != nil {
		return Backfilled{}, fmt.Errorf("backfill %s: %w", sel.Target, err)
	}
	for start := 0; start < len(ids); start += replayBatch {
		list := idList(ids[start:min(start+replayBatch, len(ids))])
		var n int64
		err := q.db.Write(ctx, func(tx *sql.Tx) error {
			ctx := context.WithoutCancel(ctx) // see store.Write
			res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO deliveries (event, target, status, run_at, created_at)
				SELECT e.id, ?, 'pending', ?, ? FROM events e WHERE e.id IN (SELECT value FROM json_each(?)) AND e.swept_at IS NULL`,
				sel.Target, now.UnixMilli(), now.UnixMilli(), list)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return r, fmt.Errorf("backfill %s: %d deliveries were queued before this, and the rest not (running the same replay again queues them): %w", sel.Target, r.Queued, err)
		}
		r.Queued += n
	}
	return r, nil
}
