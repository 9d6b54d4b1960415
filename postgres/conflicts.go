package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"hookbox/dedupe"
)

// The conflicts table keeps the copies of an event that arrived with its
// (source, event id) and another body: the last dedupe.KeptConflicts of
// each event. Only a conflicting redelivery writes it; Sweep empties it
// with the event's body, and deleting the event deletes its rows.

// keepConflict keeps a copy and, in the same statement, forgets the
// event's copies older than the KeptConflicts latest (the new one
// counted).
const keepConflict = `WITH kept AS (
		INSERT INTO conflicts (event, received_at, content_type, headers, body, body_size) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id)
	DELETE FROM conflicts WHERE event = $1
		AND id <= (SELECT id FROM conflicts WHERE event = $1 ORDER BY id DESC LIMIT 1 OFFSET $7 - 1)`

// keepConflictTx keeps ev, a redelivery of event id with another body, and
// forgets the event's oldest copies beyond KeptConflicts.
func keepConflictTx(ctx context.Context, tx pgx.Tx, id int64, ev *dedupe.Event, headers, body []byte) error {
	_, err := tx.Exec(ctx, keepConflict, id, ms(ev.ReceivedAt), ev.ContentType, headers, body, len(body), dedupe.KeptConflicts)
	return err
}

// Conflicts returns the kept conflicting copies of event id, oldest first:
// none for an unknown event, or one whose body retention removed.
func (db *DB) Conflicts(ctx context.Context, id int64) ([]dedupe.Conflict, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, received_at, content_type, headers, body, body_size
		FROM conflicts WHERE event = $1 ORDER BY id`, id)
	if err != nil {
		return nil, fmt.Errorf("conflicts of event %d: %w", id, err)
	}
	defer rows.Close()
	var out []dedupe.Conflict
	for rows.Next() {
		var c dedupe.Conflict
		var recv int64
		var headers []byte
		if err := rows.Scan(&c.ID, &recv, &c.ContentType, &headers, &c.Body, &c.BodySize); err != nil {
			return nil, fmt.Errorf("conflicts of event %d: %w", id, err)
		}
		c.ReceivedAt = fromMS(recv)
		if len(headers) > 0 {
			if err := json.Unmarshal(headers, &c.Headers); err != nil {
				return nil, fmt.Errorf("conflicts of event %d: decode headers: %w", id, err)
			}
		}
		if c.Body == nil {
			c.Body = []byte{}
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("conflicts of event %d: %w", id, err)
	}
	return out, nil
}
