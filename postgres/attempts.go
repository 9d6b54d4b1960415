package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/queue"
)

// attemptSQL records one finished attempt of a delivery (completeFn).
const attemptSQL = `INSERT INTO attempts (delivery, attempt, started_at, duration_us, outcome, http_status, exit_code, error, output)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`

// Attempts returns every recorded attempt of a delivery, oldest first.
func (db *DB) Attempts(ctx context.Context, delivery int64) ([]queue.Attempt, error) {
	rows, err := db.pool.Query(ctx, `SELECT attempt, started_at, duration_us, outcome, http_status, exit_code, error, output
		FROM attempts WHERE delivery = $1 ORDER BY id`, delivery)
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (queue.Attempt, error) {
		var a queue.Attempt
		var started, dur int64
		var status *int
		err := row.Scan(&a.Number, &started, &dur, &a.Outcome, &status, &a.ExitCode, &a.Error, &a.Output)
		a.StartedAt = fromMS(started)
		a.Duration = time.Duration(dur) * time.Microsecond
		if status != nil {
			a.HTTPStatus = *status
		}
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	return out, nil
}

// AttemptSpan returns when the first recorded attempt started and when the
// last one ended, or ok false if none is recorded.
func (db *DB) AttemptSpan(ctx context.Context) (first, last time.Time, ok bool, err error) {
	var startMS, endUS *int64
	err = db.pool.QueryRow(ctx, `SELECT min(started_at), max(started_at * 1000 + duration_us) FROM attempts`).Scan(&startMS, &endUS)
	if err != nil {
		return first, last, false, fmt.Errorf("read attempt times: %w", err)
	}
	if startMS == nil {
		return first, last, false, nil
	}
	return time.UnixMilli(*startMS), time.UnixMicro(*endUS), true, nil
}
