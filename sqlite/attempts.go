package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"hookbox/queue"
)

// attemptSQL records one finished attempt of a delivery (completeFn).
const attemptSQL = `INSERT INTO attempts (delivery, attempt, started_at, duration_us, outcome, http_status, exit_code, error, output)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

// Attempts returns every recorded attempt of a delivery, oldest first.
func (db *DB) Attempts(ctx context.Context, delivery int64) ([]queue.Attempt, error) {
	rows, err := db.reader.QueryContext(ctx, `SELECT attempt, started_at, duration_us, outcome, http_status, exit_code, error, output
		FROM attempts WHERE delivery = ? ORDER BY id`, delivery)
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	defer rows.Close()
	var out []queue.Attempt
	for rows.Next() {
		var a queue.Attempt
		var started, dur int64
		var status, exit sql.NullInt64
		if err := rows.Scan(&a.Number, &started, &dur, &a.Outcome, &status, &exit, &a.Error, &a.Output); err != nil {
			return nil, fmt.Errorf("list attempts: %w", err)
		}
		a.StartedAt = time.UnixMilli(started).UTC()
		a.Duration = time.Duration(dur) * time.Microsecond
		a.HTTPStatus = int(status.Int64)
		if exit.Valid {
			c := int(exit.Int64)
			a.ExitCode = &c
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// AttemptSpan returns when the first recorded attempt started and when the
// last one ended, or ok false if none is recorded.
func (db *DB) AttemptSpan(ctx context.Context) (first, last time.Time, ok bool, err error) {
	var startMS, endUS sql.NullInt64
	err = db.reader.QueryRowContext(ctx, `SELECT MIN(started_at), MAX(started_at * 1000 + duration_us) FROM attempts`).Scan(&startMS, &endUS)
	if err != nil {
		return first, last, false, fmt.Errorf("read attempt times: %w", err)
	}
	if !startMS.Valid {
		return first, last, false, nil
	}
	return time.UnixMilli(startMS.Int64), time.UnixMicro(endUS.Int64), true, nil
}
