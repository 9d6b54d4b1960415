package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"hookbox/queue"
)

// replayBatch is how many deliveries one of Replay's or Backfill's writes
// queues.
const replayBatch = 500

// Replay puts deliveries back to pending with attempts reset, whatever their
// status except running. It selects by event row id (event > 0), by dead
// status (deadOnly) or by receive time (since/until). Deliveries of events
// whose payload retention removed are left out (they could only go dead
// again) and counted in Swept; running ones (an attempt under way, or
// claimed for one) are left as they are and counted in Running. A selector
// that selects none of these is an error.
func (db *DB) Replay(ctx context.Context, sel queue.ReplaySelector, now time.Time) (queue.Replayed, error) {
	var where []string
	var args []any
	if sel.Event > 0 {
		where = append(where, `event = ?`)
		args = append(args, sel.Event)
	}
	if sel.DeadOnly {
		// Through the dead letters not revived: not a walk of every delivery.
		where = append(where, `id IN (SELECT delivery FROM dead_letters WHERE revived_at IS NULL) AND status = 'dead'`)
	}
	if sel.Target != "" {
		where = append(where, `target = ?`)
		args = append(args, sel.Target)
	}
	if !sel.Since.IsZero() || !sel.Until.IsZero() {
		sub := `event IN (SELECT id FROM events WHERE 1=1`
		if !sel.Since.IsZero() {
			sub += ` AND received_at >= ?`
			args = append(args, sel.Since.UnixMilli())
		}
		if !sel.Until.IsZero() {
			sub += ` AND received_at < ?`
			args = append(args, sel.Until.UnixMilli())
		}
		where = append(where, sub+`)`)
	}
	if len(where) == 0 {
		return queue.Replayed{}, errors.New("replay: select an event, the dead letters or a period")
	}
	const swept = `EXISTS (SELECT 1 FROM events e WHERE e.id = deliveries.event AND e.swept_at IS NOT NULL)`
	// Chosen on a read connection, then queued again in small writes: a
	// period can hold hundreds of thousands of deliveries, and one write
	// transaction over them all would hold the store past a running
	// serve's busy timeout (its senders would get 503).
	var r queue.Replayed
	var ids []int64
	rows, err := db.reader.QueryContext(ctx, `SELECT id, status = 'running', `+swept+` FROM deliveries WHERE `+strings.Join(where, " AND "), args...)
	if err != nil {
		return queue.Replayed{}, fmt.Errorf("replay: %w", err)
	}
	for rows.Next() {
		var id int64
		var running, gone bool
		if err := rows.Scan(&id, &running, &gone); err != nil {
			rows.Close()
			return queue.Replayed{}, fmt.Errorf("replay: %w", err)
		}
		if r.Sort(running, gone) {
			ids = append(ids, id)
		}
	}
	if err := rows.Close(); err != nil {
		return queue.Replayed{}, fmt.Errorf("replay: %w", err)
	}
	// Each write checks the selection again: a delivery may have been
	// claimed, or a dead one revived and done, or its payload swept, since
	// the read; those are left as they are and counted in Changed.
	recheck := `status != 'running' AND NOT ` + swept
	if sel.DeadOnly {
		recheck += ` AND status = 'dead'`
	}
	for start := 0; start < len(ids); start += replayBatch {
		list := idList(ids[start:min(start+replayBatch, len(ids))])
		var n int64
		err := db.w.write(ctx, func(tx *sql.Tx) error {
			ctx := context.WithoutCancel(ctx) // see writer.write
			// Running by now (claimed since the read): left to finish.
			if _, err := tx.ExecContext(ctx, reviveLettersSQL+`
				WHERE revived_at IS NULL AND delivery IN (SELECT id FROM deliveries WHERE id IN (SELECT value FROM json_each(?)) AND status = 'dead' AND `+recheck+`)`,
				now.UnixMilli(), list); err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, reviveSQL+`, skip_reason = ''
				WHERE id IN (SELECT value FROM json_each(?)) AND `+recheck, now.UnixMilli(), list)
			if err != nil {
				return err
			}
			if n, err = res.RowsAffected(); err != nil {
				return err
			}
			// Into their lanes, forced: the user asked, so a stale or
			// superseded one runs too, in its turn.
			return db.enterLanesTx(ctx, tx, `id IN (SELECT value FROM json_each(?)) AND status = 'pending' AND attempts = 0`, []any{list}, true, now)
		})
		if err != nil {
			return r, fmt.Errorf("replay: %d of %d deliveries were queued again before this, and the rest not (running the same replay again queues them): %w", r.Queued, len(ids), err)
		}
		r.Queued += n
	}
	r.Changed = int64(len(ids)) - r.Queued
	return r, nil
}

// Backfill queues a delivery to sel.Target for each selected event that
// matches it and has none for it: the events received before a target was
// added or renamed. It chooses on a read connection and writes in batches;
// an event that got its delivery meanwhile is left as it is (UNIQUE
// (event, target)).
func (db *DB) Backfill(ctx context.Context, sel queue.BackfillSelector, now time.Time) (queue.Backfilled, error) {
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
	rows, err := db.reader.QueryContext(ctx, query+` ORDER BY e.id`, args...)
	if err != nil {
		return queue.Backfilled{}, fmt.Errorf("backfill %s: %w", sel.Target, err)
	}
	var r queue.Backfilled
	var ids []int64
	for rows.Next() {
		var id int64
		var source, typ string
		var swept bool
		if err := rows.Scan(&id, &source, &typ, &swept); err != nil {
			rows.Close()
			return queue.Backfilled{}, fmt.Errorf("backfill %s: %w", sel.Target, err)
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
		return queue.Backfilled{}, fmt.Errorf("backfill %s: %w", sel.Target, err)
	}
	for start := 0; start < len(ids); start += replayBatch {
		list := idList(ids[start:min(start+replayBatch, len(ids))])
		var n int64
		err := db.w.write(ctx, func(tx *sql.Tx) error {
			ctx := context.WithoutCancel(ctx) // see writer.write
			if _, ordered := db.order.Lane(sel.Target); ordered {
				// Each in its event's lane, as if it had come now.
				res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO deliveries (event, target, status, run_at, created_at, lane, rank)
					SELECT e.id, ?, 'pending', CASE WHEN e.order_key IS NULL THEN ? ELSE `+parkedSQL+` END, ?, e.order_key, coalesce(e.order_rank, '')
					FROM events e WHERE e.id IN (SELECT value FROM json_each(?)) AND e.swept_at IS NULL`,
					sel.Target, now.UnixMilli(), now.UnixMilli(), list)
				if err != nil {
					return err
				}
				if n, err = res.RowsAffected(); err != nil {
					return err
				}
				return db.enterLanesTx(ctx, tx, `target = ? AND event IN (SELECT value FROM json_each(?)) AND run_at = `+parkedSQL, []any{sel.Target, list}, false, now)
			}
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
