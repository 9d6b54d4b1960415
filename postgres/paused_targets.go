package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/queue"
)

// The paused_targets table holds the targets hookbox pause holds. The
// deliveries of a paused target wait as 'paused', outside the due index.
// While a target is paused, the trigger deliveries_pause (its function is
// migration 0003's) keeps every delivery that enters the queue for one of
// them paused, whichever statement, on whichever replica, put it there.
// It exists only while a target is paused: a database with no target
// paused pays nothing for it.

const (
	createPauseTrigger = `CREATE OR REPLACE TRIGGER deliveries_pause BEFORE INSERT OR UPDATE OF status ON deliveries
		FOR EACH ROW WHEN (NEW.status IN ('pending', 'retrying'))
		EXECUTE FUNCTION deliveries_pause()`
	dropPauseTrigger = `DROP TRIGGER IF EXISTS deliveries_pause ON deliveries`
)

// lockQueueSQL makes a pause or a resume wait for the writes to deliveries
// under way and holds new ones back until it commits: a write whose
// trigger read paused_targets before the change cannot commit after the
// pause's own update and leave a delivery of a paused target queued (or,
// after a resume, one of a released target paused). Reads go on.
const lockQueueSQL = `LOCK TABLE deliveries IN SHARE ROW EXCLUSIVE MODE`

// Pause holds target's queued deliveries, and every one queued for it
// later, as paused until Resume, durably: a restarted serve keeps them
// held. Running ones finish their attempt; a retry they then need waits
// paused. Pausing a paused target changes nothing but reports when it was
// paused (Already). The store does not know the config: the caller checks
// that target is one.
func (db *DB) Pause(ctx context.Context, target string, now time.Time) (queue.PauseResult, error) {
	var r queue.PauseResult
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		r = queue.PauseResult{}
		if _, err := tx.Exec(ctx, lockQueueSQL); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO paused_targets (target, paused_at) VALUES ($1, $2) ON CONFLICT (target) DO NOTHING`, target, ms(now))
		if err != nil {
			return err
		}
		r.Already = tag.RowsAffected() == 0
		var since int64
		if err := tx.QueryRow(ctx, `SELECT paused_at FROM paused_targets WHERE target = $1`, target).Scan(&since); err != nil {
			return err
		}
		r.Since = fromMS(since)
		if _, err := tx.Exec(ctx, createPauseTrigger); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE deliveries SET status = 'paused' WHERE `+dueCondition+` AND status <> 'running' AND target = $1`, target); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'paused'), count(*) FILTER (WHERE status = 'running')
			FROM deliveries WHERE status IN ('paused', 'running') AND target = $1`, target).Scan(&r.Deliveries, &r.Running)
	})
	if err != nil {
		return queue.PauseResult{}, fmt.Errorf("pause %s: %w", target, err)
	}
	return r, nil
}

// Resume releases target's paused deliveries, due at once (the wait a
// retry had left when the target was paused is not kept; those due earlier
// keep their place in the claim's order), and lets the ones queued later
// run. Resuming a target that is not paused changes nothing (Already).
func (db *DB) Resume(ctx context.Context, target string, now time.Time) (queue.PauseResult, error) {
	var r queue.PauseResult
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		r = queue.PauseResult{}
		if _, err := tx.Exec(ctx, lockQueueSQL); err != nil {
			return err
		}
		var since int64
		err := tx.QueryRow(ctx, `DELETE FROM paused_targets WHERE target = $1 RETURNING paused_at`, target).Scan(&since)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			r.Already = true
		case err != nil:
			return err
		default:
			r.Since = fromMS(since)
		}
		var others int64
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM paused_targets`).Scan(&others); err != nil {
			return err
		}
		if others == 0 {
			if _, err := tx.Exec(ctx, dropPauseTrigger); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, `UPDATE deliveries SET status = CASE WHEN attempts = 0 THEN 'pending' ELSE 'retrying' END,
			run_at = CASE WHEN run_at = `+parkedSQL+` THEN run_at ELSE least(run_at, $1) END
			WHERE status = 'paused' AND target = $2`, ms(now), target)
		if err != nil {
			return err
		}
		r.Deliveries = tag.RowsAffected()
		return nil
	})
	if err != nil {
		return queue.PauseResult{}, fmt.Errorf("resume %s: %w", target, err)
	}
	return r, nil
}

// Paused lists the paused targets by name.
func (db *DB) Paused(ctx context.Context) ([]queue.PausedTarget, error) {
	rows, err := db.pool.Query(ctx, `SELECT target, paused_at FROM paused_targets ORDER BY target`)
	if err != nil {
		return nil, fmt.Errorf("paused targets: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (queue.PausedTarget, error) {
		var p queue.PausedTarget
		var since int64
		err := row.Scan(&p.Name, &since)
		p.Since = fromMS(since)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("paused targets: %w", err)
	}
	return out, nil
}
