package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"hookbox/dedupe"
)

// The conflicts table keeps the copies of an event that arrived with its
// (source, event id) and another body: the last dedupe.KeptConflicts of
// each event. Only a conflicting redelivery writes it; Sweep empties it
// with the event's body, and deleting the event deletes its rows.

const (
	insertConflict = `INSERT INTO conflicts (event, received_at, content_type, headers, body, body_size) VALUES (?, ?, ?, ?, ?, ?)`
	// trimConflicts deletes the event's copies older than the
	// KeptConflicts latest; none while it has no more than that.
	trimConflicts = `DELETE FROM conflicts WHERE event = ? AND id <= (SELECT id FROM conflicts WHERE event = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`
	// sweepConflictsSQL deletes the copies of the events of a sweep's
	// window whose bodies were swept.
	sweepConflictsSQL = `DELETE FROM conflicts WHERE event >= ? AND event < ?
		AND EXISTS (SELECT 1 FROM events e WHERE e.id = conflicts.event AND e.swept_at IS NOT NULL)`
)

// keepConflictTx keeps ev, a redelivery of event id with another body, and
// forgets the event's oldest copies beyond KeptConflicts.
func (db *DB) keepConflictTx(ctx context.Context, tx *sql.Tx, id int64, ev *dedupe.Event, headers, body []byte) error {
	ins, err := db.w.stmt(ctx, tx, insertConflict)
	if err != nil {
		return err
	}
	if _, err := ins.ExecContext(ctx, id, ev.ReceivedAt.UnixMilli(), ev.ContentType, headers, body, len(body)); err != nil {
		return err
	}
	trim, err := db.w.stmt(ctx, tx, trimConflicts)
	if err != nil {
		return err
	}
	_, err = trim.ExecContext(ctx, id, id, dedupe.KeptConflicts)
	return err
}

// Conflicts returns the kept conflicting copies of event id, oldest first:
// none for an unknown event, or one whose body retention removed.
func (db *DB) Conflicts(ctx context.Context, id int64) ([]dedupe.Conflict, error) {
	rows, err := db.reader.QueryContext(ctx, `SELECT id, received_at, content_type, headers, body, body_size
		FROM conflicts WHERE event = ? ORDER BY id`, id)
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
		c.ReceivedAt = time.UnixMilli(recv).UTC()
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
