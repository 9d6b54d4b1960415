package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// Ping runs an empty write through the writer and returns once it has
// committed: the proof that the writer goroutine runs and gets the write
// lock (the liveness check behind /readyz and systemd's watchdog). A
// wedged writer never answers: ctx bounds the wait, and the write, once
// queued, is skipped if ctx ended first.
func (db *DB) Ping(ctx context.Context) error {
	done := make(chan error, 1)
	if err := db.w.writeAsync(ctx, func(*sql.Tx) error { return nil }, func(err error) { done <- err }); err != nil {
		return fmt.Errorf("store write check: %w", err)
	}
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("store write check: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("store write check: the writer did not commit within the check's time: %w", ctx.Err())
	}
}
