package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"hookbox/queue"
)

// The paused_targets table holds the targets hookbox pause holds. The
// deliveries of a paused target wait as 'paused', outside the due index.
//
// Whatever puts a delivery of a paused target in the queue (a new event, a
// failed attempt's retry, a replay, a redelivery reviving a dead one, an
// interrupted attempt released, a claim returned unstarted or deferred)
// leaves it paused instead, through pauseTriggers: in the store, not in
// each statement, so that every writer holds to it (serve, the commands)
// and the queue's statements stay as they are. The triggers exist only
// while a target is paused: a trigger on deliveries costs each insert and
// each status change about a microsecond even when it does nothing, and a
// store with no target paused pays none of it. Creating or dropping them
// changes the schema, which makes each connection prepare its statements
// again once.

// pauseTriggers are created by the first pause and dropped by the resume
// of the last paused target. The test of the target comes second: for the
// rows of other statuses the trigger costs one comparison.
var pauseTriggers = []string{
	`CREATE TRIGGER IF NOT EXISTS deliveries_pause_insert AFTER INSERT ON deliveries
		WHEN (NEW.status = 'pending' OR NEW.status = 'retrying')
			AND EXISTS (SELECT 1 FROM paused_targets WHERE target = NEW.target)
	BEGIN
		UPDATE deliveries SET status = 'paused' WHERE id = NEW.id;
	END`,
	`CREATE TRIGGER IF NOT EXISTS deliveries_pause_update AFTER UPDATE OF status ON deliveries
		WHEN (NEW.status = 'pending' OR NEW.status = 'retrying')
			AND EXISTS (SELECT 1 FROM paused_targets WHERE target = NEW.target)
	BEGIN
		UPDATE deliveries SET status = 'paused' WHERE id = NEW.id;
	END`,
}

var dropPauseTriggers = []string{
	`DROP TRIGGER IF EXISTS deliveries_pause_insert`,
	`DROP TRIGGER IF EXISTS deliveries_pause_update`,
}

// pauseSQL holds a target's queued deliveries, through the due index (the
// queue, not the whole table). Running ones finish their attempt; a retry
// they then need waits paused.
const pauseSQL = `UPDATE deliveries INDEXED BY deliveries_due SET status = 'paused'
	WHERE ` + dueCondition + ` AND status != 'running' AND target = ?`

// resumeSQL releases a target's paused deliveries, due at once: the wait a
// retry had left when the target was paused is not kept (the target was
// held for a reason that is now gone), and those due earlier keep their
// place in the claim's order.
const resumeSQL = `UPDATE deliveries INDEXED BY deliveries_paused
	SET status = CASE WHEN attempts = 0 THEN 'pending' ELSE 'retrying' END,
		run_at = CASE WHEN run_at = ` + parkedSQL + ` THEN run_at ELSE min(run_at, ?) END
	WHERE status = 'paused' AND target = ?`

// Pause holds target's queued deliveries, and every one queued for it
// later, as paused until Resume, durably: a restarted serve keeps them
// held. Pausing a paused target changes nothing but reports when it was
// paused (Already). The store does not know the config: the caller checks
// that target is one.
func (db *DB) Pause(ctx context.Context, target string, now time.Time) (queue.PauseResult, error) {
	var r queue.PauseResult
	err := db.w.write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see writer.write
		r = queue.PauseResult{}
		res, err := tx.ExecContext(ctx, `INSERT INTO paused_targets (target, paused_at) VALUES (?, ?) ON CONFLICT (target) DO NOTHING`,
			target, now.UnixMilli())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			r.Already = true
		}
		var since int64
		if err := tx.QueryRowContext(ctx, `SELECT paused_at FROM paused_targets WHERE target = ?`, target).Scan(&since); err != nil {
			return err
		}
		r.Since = time.UnixMilli(since).UTC()
		for _, q := range pauseTriggers {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, pauseSQL, target); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM deliveries INDEXED BY deliveries_paused WHERE status = 'paused' AND target = ?`,
			target).Scan(&r.Deliveries); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT count(*) FROM deliveries INDEXED BY deliveries_due WHERE `+dueCondition+`
			AND status = 'running' AND target = ?`, target).Scan(&r.Running)
	})
	if err != nil {
		return queue.PauseResult{}, fmt.Errorf("pause %s: %w", target, err)
	}
	return r, nil
}

// Resume releases target's paused deliveries, due at once, and lets the
// ones queued later run. Resuming a target that is not paused changes
// nothing (Already).
func (db *DB) Resume(ctx context.Context, target string, now time.Time) (queue.PauseResult, error) {
	var r queue.PauseResult
	err := db.w.write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see writer.write
		r = queue.PauseResult{}
		var since int64
		err := tx.QueryRowContext(ctx, `DELETE FROM paused_targets WHERE target = ? RETURNING paused_at`, target).Scan(&since)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			r.Already = true
		case err != nil:
			return err
		default:
			r.Since = time.UnixMilli(since).UTC()
		}
		var others int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM paused_targets`).Scan(&others); err != nil {
			return err
		}
		if others == 0 {
			for _, q := range dropPauseTriggers {
				if _, err := tx.ExecContext(ctx, q); err != nil {
					return err
				}
			}
		}
		res, err := tx.ExecContext(ctx, resumeSQL, now.UnixMilli(), target)
		if err != nil {
			return err
		}
		r.Deliveries, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return queue.PauseResult{}, fmt.Errorf("resume %s: %w", target, err)
	}
	return r, nil
}

// Paused lists the paused targets by name.
func (db *DB) Paused(ctx context.Context) ([]queue.PausedTarget, error) {
	rows, err := db.reader.QueryContext(ctx, `SELECT target, paused_at FROM paused_targets ORDER BY target`)
	if err != nil {
		return nil, fmt.Errorf("paused targets: %w", err)
	}
	defer rows.Close()
	var out []queue.PausedTarget
	for rows.Next() {
		var p queue.PausedTarget
		var since int64
		if err := rows.Scan(&p.Name, &since); err != nil {
			return nil, fmt.Errorf("paused targets: %w", err)
		}
		p.Since = time.UnixMilli(since).UTC()
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("paused targets: %w", err)
	}
	return out, nil
}
