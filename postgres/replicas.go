package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/queue"
	"hookbox/replica"
)

// Several serve replicas share one database. Each records itself in the
// replicas table at its start and each of its claims (deliveries.replica).
// A starting replica takes back at once what it and the replicas that are
// provably gone (on its machine, their process no longer running) left
// running; a delivery held by a replica it cannot prove gone (a live one,
// or one on another machine) is taken over by a claim once its lease has
// passed, fenced by the lease token as always.

const registerSQL = `INSERT INTO replicas (id, host, pid, boot, pidns, proc_start, started_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`

// register records this replica, so that a later one on its machine can
// tell once it is gone.
func (db *DB) register(ctx context.Context) error {
	r := db.replica
	if r.ID == "" {
		return nil
	}
	if _, err := db.pool.Exec(ctx, registerSQL, r.ID, r.Host, r.PID, r.Boot, r.PIDNS, int64(r.Start), ms(time.Now())); err != nil {
		return fmt.Errorf("register replica %s: %w", r.ID, err)
	}
	return nil
}

// unregister deletes this replica's row unless a delivery is still
// marked running under its claims (a result that could not be written):
// the row is what lets a later replica on this machine take it back.
func (db *DB) unregister() {
	if db.replica.ID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = db.pool.Exec(ctx, `DELETE FROM replicas WHERE id = $1
		AND NOT EXISTS (SELECT 1 FROM deliveries WHERE `+dueCondition+` AND status = 'running' AND replica = $1)`, db.replica.ID)
}

// leftovers names the replicas whose running deliveries are this one's to
// take back: itself, and those of its machine that are provably gone.
func (db *DB) leftovers(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) (own []string, gone []string, err error) {
	own = []string{db.replica.ID}
	if db.replica.ID == "" {
		return own, nil, nil
	}
	rows, err := q.Query(ctx, `SELECT id, host, pid, boot, pidns, proc_start FROM replicas WHERE host = $1 AND id <> $2`,
		db.replica.Host, db.replica.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("replicas: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (replica.Process, error) {
		var p replica.Process
		var start int64
		err := row.Scan(&p.ID, &p.Host, &p.PID, &p.Boot, &p.PIDNS, &start)
		p.Start = uint64(start)
		return p, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("replicas: %w", err)
	}
	for _, p := range list {
		if db.replica.Gone(p) {
			gone = append(gone, p.ID)
		}
	}
	return append(own, gone...), gone, nil
}

// Running lists the deliveries Recover would take back: those marked
// running under this replica's claims or those of a replica of this
// machine that is gone, each with the replica that claimed it. Before
// Recover, these are what a stopped process left behind, and its commands
// may still run.
func (db *DB) Running(ctx context.Context) ([]queue.RunningKey, error) {
	mine, _, err := db.leftovers(ctx, db.pool)
	if err != nil {
		return nil, fmt.Errorf("running deliveries: %w", err)
	}
	rows, err := db.pool.Query(ctx, `SELECT e.source, e.event_id, d.target, d.replica
		FROM deliveries d JOIN events e ON e.id = d.event
		WHERE d.`+dueCondition+` AND d.status = 'running' AND d.replica = ANY ($1::text[])`, mine)
	if err != nil {
		return nil, fmt.Errorf("running deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (queue.RunningKey, error) {
		var k queue.RunningKey
		err := row.Scan(&k.Source, &k.EventID, &k.Target, &k.Replica)
		return k, err
	})
	if err != nil {
		return nil, fmt.Errorf("running deliveries: %w", err)
	}
	return out, nil
}

// Recover makes due now the deliveries left running under this replica's
// claims (run it at the start, before the pool claims) and under those of
// the replicas of this machine that are provably gone, and forgets those
// replicas. It returns how many deliveries it made due. A delivery that a
// live replica, or one it cannot prove gone, holds is left alone: a claim
// takes it over once its lease has passed.
func (db *DB) Recover(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		mine, gone, err := db.leftovers(ctx, tx)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE deliveries SET status = 'retrying', run_at = $1, last_error = 'interrupted: hookbox stopped during the attempt'
			WHERE `+dueCondition+` AND status = 'running' AND replica = ANY ($2::text[])`, ms(now), mine)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		if len(gone) > 0 {
			_, err = tx.Exec(ctx, `DELETE FROM replicas WHERE id = ANY ($1::text[])`, gone)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("recover running deliveries: %w", err)
	}
	return n, nil
}
