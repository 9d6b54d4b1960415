package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/queue"
)

// replayBatch is how many deliveries one of Replay's or Backfill's writes
// queues.
const replayBatch = 500

// Replay puts deliveries back to pending with attempts reset, whatever their
// status except running. It selects by event row id (event > 0), by dead
// status (deadOnly) or by receive time (since/until). Deliveries of events
// whose payload retention removed are left out (they could only go dead
// again) and counted in Swept; running ones are left as they are and
// counted in Running. A selector that selects none of these is an error.
func (db *DB) Replay(ctx context.Context, sel queue.ReplaySelector, now time.Time) (queue.Replayed, error) {
	var a args
	var where []string
	if sel.Event > 0 {
		where = append(where, `event = `+a.add(sel.Event))
	}
	if sel.DeadOnly {
		where = append(where, `id IN (SELECT delivery FROM dead_letters WHERE revived_at IS NULL) AND status = 'dead'`)
	}
	if sel.Target != "" {
		where = append(where, `target = `+a.add(sel.Target))
	}
	if !sel.Since.IsZero() || !sel.Until.IsZero() {
		sub := `event IN (SELECT id FROM events WHERE true`
		if !sel.Since.IsZero() {
			sub += ` AND received_at >= ` + a.add(ms(sel.Since))
		}
		if !sel.Until.IsZero() {
			sub += ` AND received_at < ` + a.add(ms(sel.Until))
		}
		where = append(where, sub+`)`)
	}
	if len(where) == 0 {
		return queue.Replayed{}, errors.New("replay: select an event, the dead letters or a period")
	}
	const swept = `EXISTS (SELECT 1 FROM events e WHERE e.id = deliveries.event AND e.swept_at IS NOT NULL)`
	// Chosen first, then queued again in small writes: a period can hold
	// hundreds of thousands of deliveries, and one transaction over them
	// all would hold their row locks against the workers for its length.
	var r queue.Replayed
	var list []int64
	rows, err := db.pool.Query(ctx, `SELECT id, status = 'running', `+swept+` FROM deliveries WHERE `+strings.Join(where, " AND "), a...)
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
			list = append(list, id)
		}
	}
	if err := rows.Err(); err != nil {
		return queue.Replayed{}, fmt.Errorf("replay: %w", err)
	}
	// Each write checks the selection again: a delivery may have been
	// claimed, or a dead one revived and done, or its payload swept, since
	// the read; those are left as they are and counted in Changed.
	recheck := `status <> 'running' AND NOT ` + swept
	if sel.DeadOnly {
		recheck += ` AND status = 'dead'`
	}
	for start := 0; start < len(list); start += replayBatch {
		chunk := list[start:min(start+replayBatch, len(list))]
		var n int64
		err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
			// The lanes first, in order: they are locked before their
			// deliveries in every transaction.
			if err := lockLanesTx(ctx, tx, `id = ANY ($1::bigint[])`, chunk); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, reviveLettersSet+`
				WHERE revived_at IS NULL AND delivery IN (SELECT id FROM deliveries WHERE id = ANY ($2::bigint[]) AND status = 'dead' AND `+recheck+`)`,
				ms(now), chunk); err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, reviveSet+`, skip_reason = '' WHERE id = ANY ($2::bigint[]) AND `+recheck, ms(now), chunk)
			if err != nil {
				return err
			}
			n = tag.RowsAffected()
			// Into their lanes, forced: the user asked, so a stale or
			// superseded one runs too, in its turn.
			return db.enterLanesTx(ctx, tx, `id = ANY ($1::bigint[]) AND status = 'pending' AND attempts = 0`, []any{chunk}, true, now)
		})
		if err != nil {
			return r, fmt.Errorf("replay: %d of %d deliveries were queued again before this, and the rest not (running the same replay again queues them): %w", r.Queued, len(list), err)
		}
		r.Queued += n
	}
	r.Changed = int64(len(list)) - r.Queued
	return r, nil
}

// Backfill queues a delivery to sel.Target for each selected event that
// matches it and has none for it: the events received before a target was
// added or renamed. An event that got its delivery meanwhile is left as
// it is (ON CONFLICT on UNIQUE (event, target)).
func (db *DB) Backfill(ctx context.Context, sel queue.BackfillSelector, now time.Time) (queue.Backfilled, error) {
	var a args
	query := `SELECT e.id, e.source, e.type, e.swept_at IS NOT NULL FROM events e
		WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event = e.id AND d.target = ` + a.add(sel.Target) + `)`
	if sel.Event > 0 {
		query += ` AND e.id = ` + a.add(sel.Event)
	}
	if !sel.Since.IsZero() {
		query += ` AND e.received_at >= ` + a.add(ms(sel.Since))
	}
	if !sel.Until.IsZero() {
		query += ` AND e.received_at < ` + a.add(ms(sel.Until))
	}
	rows, err := db.pool.Query(ctx, query+` ORDER BY e.id`, a...)
	if err != nil {
		return queue.Backfilled{}, fmt.Errorf("backfill %s: %w", sel.Target, err)
	}
	var r queue.Backfilled
	var list []int64
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
			list = append(list, id)
		}
	}
	if err := rows.Err(); err != nil {
		return queue.Backfilled{}, fmt.Errorf("backfill %s: %w", sel.Target, err)
	}
	for start := 0; start < len(list); start += replayBatch {
		chunk := list[start:min(start+replayBatch, len(list))]
		var n int64
		err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
			if _, ordered := db.order.Lane(sel.Target); ordered {
				// Each in its event's lane, as if it had come now.
				if _, err := tx.Exec(ctx, `SELECT 1 FROM lanes WHERE target = $1 AND key IN (SELECT order_key FROM events WHERE id = ANY ($2::bigint[]))
					ORDER BY key FOR UPDATE`, sel.Target, chunk); err != nil {
					return err
				}
				tag, err := tx.Exec(ctx, `INSERT INTO deliveries (event, target, status, run_at, created_at, lane, rank)
					SELECT e.id, $1, 'pending', CASE WHEN e.order_key IS NULL THEN $2 ELSE `+parkedSQL+` END, $2, e.order_key, coalesce(e.order_rank, '')
					FROM events e WHERE e.id = ANY ($3::bigint[]) AND e.swept_at IS NULL
					ON CONFLICT (event, target) DO NOTHING`, sel.Target, ms(now), chunk)
				if err != nil {
					return err
				}
				n = tag.RowsAffected()
				return db.enterLanesTx(ctx, tx, `target = $1 AND event = ANY ($2::bigint[]) AND run_at = `+parkedSQL, []any{sel.Target, chunk}, false, now)
			}
			tag, err := tx.Exec(ctx, `INSERT INTO deliveries (event, target, status, run_at, created_at)
				SELECT e.id, $1, 'pending', $2, $2 FROM events e WHERE e.id = ANY ($3::bigint[]) AND e.swept_at IS NULL
				ON CONFLICT (event, target) DO NOTHING`,
				sel.Target, ms(now), chunk)
			n = tag.RowsAffected()
			return err
		})
		if err != nil {
			return r, fmt.Errorf("backfill %s: %d deliveries were queued before this, and the rest not (running the same replay again queues them): %w", sel.Target, r.Queued, err)
		}
		r.Queued += n
	}
	return r, nil
}
