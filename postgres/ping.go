package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Ping runs an empty read-write transaction and returns once it has
// committed: the proof that the database answers and takes transactions
// (the liveness check behind /readyz and systemd's watchdog). Unlike the
// writes, it ends with ctx: it changes nothing, so nothing is lost.
func (db *DB) Ping(ctx context.Context) error {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return fmt.Errorf("store write check: %w", ErrClosed)
	}
	if err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT 1`)
		return err
	}); err != nil {
		return fmt.Errorf("store write check: %w", err)
	}
	return nil
}
