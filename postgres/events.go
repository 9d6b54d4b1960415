package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/dedupe"
)

// The events table is both the raw inbox and the dedupe index: INSERT … ON
// CONFLICT on its UNIQUE (source, event_id) decides whether an event is
// new, inside the transaction that stores it and its deliveries. A copy
// arriving while another is being stored waits for that transaction, then
// finds the row: concurrent copies, on one replica or several, cannot both
// pass.

const (
	insertEvent = `INSERT INTO events (source, event_id, type, received_at, content_type, headers, body, body_size, order_key, order_version, order_rank,
		secret_index, secret_count)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
		ON CONFLICT (source, event_id) DO NOTHING
		RETURNING id`
	recordRedelivery = `UPDATE events SET redeliveries = redeliveries + 1, last_seen_at = $1,
		conflicts = conflicts + (body IS NOT NULL AND body <> $2)::int
		WHERE source = $3 AND event_id = $4
		RETURNING id, (body IS NOT NULL AND body <> $2)`
)

// IngestEvent stores ev with a pending delivery to each of targets, or, if
// its (source, event id) is stored already, counts it as a redelivery and
// puts that event's dead deliveries back to pending (the sender asks
// again); targets are then not looked at. It returns once the transaction
// is committed, and sets ev.ID. An error means nothing was written.
func (db *DB) IngestEvent(ctx context.Context, ev *dedupe.Event, targets []string) (dedupe.Result, error) {
	headers, err := json.Marshal(ev.Headers)
	if err != nil {
		return dedupe.Result{}, fmt.Errorf("encode headers: %w", err)
	}
	var res dedupe.Result
	err = db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		res, err = db.ingestTx(ctx, tx, ev, headers, targets)
		return err
	})
	if err != nil {
		return dedupe.Result{}, err
	}
	return res, nil
}

// IngestEvents is IngestEvent for each of evs, all in one transaction
// (all or none), each new one queued for targets.
func (db *DB) IngestEvents(ctx context.Context, evs []*dedupe.Event, targets []string) ([]dedupe.Result, error) {
	headers := make([][]byte, len(evs))
	for i, ev := range evs {
		var err error
		if headers[i], err = json.Marshal(ev.Headers); err != nil {
			return nil, fmt.Errorf("encode headers: %w", err)
		}
	}
	out := make([]dedupe.Result, len(evs))
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		for i, ev := range evs {
			var err error
			if out[i], err = db.ingestTx(ctx, tx, ev, headers[i], targets); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (db *DB) ingestTx(ctx context.Context, tx pgx.Tx, ev *dedupe.Event, headers []byte, targets []string) (dedupe.Result, error) {
	body := ev.Body
	if body == nil {
		body = []byte{} // NULL means swept; an empty body is still a body
	}
	now := ms(ev.ReceivedAt)
	var id int64
	err := tx.QueryRow(ctx, insertEvent, ev.Source, ev.EventID, ev.Type, now, ev.ContentType, headers, body, len(body),
		nullString(ev.OrderKey), nullString(ev.OrderVersion), nullString(ev.OrderRank), ev.SecretIndex, ev.SecretCount).Scan(&id)
	switch {
	case err == nil:
		ev.ID = id
		if len(targets) > 0 {
			if err := db.enqueueTx(ctx, tx, id, ev.OrderKey, ev.OrderRank, targets, ev.ReceivedAt); err != nil {
				return dedupe.Result{}, fmt.Errorf("enqueue event %d: %w", id, err)
			}
		}
		return dedupe.Result{ID: id}, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return dedupe.Result{}, fmt.Errorf("insert event: %w", err)
	}
	// Already stored: the constraint, not a prior SELECT, decided.
	var conflict bool
	if err := tx.QueryRow(ctx, recordRedelivery, now, body, ev.Source, ev.EventID).Scan(&id, &conflict); err != nil {
		return dedupe.Result{}, fmt.Errorf("record redelivery: %w", err)
	}
	ev.ID = id
	res := dedupe.Result{ID: id, Duplicate: true, Conflict: conflict}
	if conflict {
		if err := keepConflictTx(ctx, tx, id, ev, headers, body); err != nil {
			return dedupe.Result{}, fmt.Errorf("keep conflicting copy of event %d: %w", id, err)
		}
	}
	if res.Revived, err = db.reviveTx(ctx, tx, id, ev.ReceivedAt); err != nil {
		return dedupe.Result{}, fmt.Errorf("revive event %d: %w", id, err)
	}
	return res, nil
}

// ListEvents returns events newest first, without bodies.
func (db *DB) ListEvents(ctx context.Context, f dedupe.Filter) ([]dedupe.Stored, error) {
	var a args
	q := `SELECT id, source, event_id, type, received_at, content_type, redeliveries, last_seen_at, conflicts, body_size, swept_at IS NOT NULL,
		coalesce(order_key, ''), coalesce(order_version, ''), coalesce(order_rank, '')
		FROM events e WHERE true`
	if f.Key != "" {
		q += ` AND order_key = ` + a.add(f.Key)
	}
	if f.Before > 0 {
		q += ` AND id < ` + a.add(f.Before)
	}
	if f.Source != "" {
		q += ` AND source = ` + a.add(f.Source)
	}
	if f.After > 0 {
		q += ` AND id > ` + a.add(f.After)
	}
	if f.Type != "" {
		q += ` AND type = ` + a.add(f.Type)
	}
	if f.IDContains != "" {
		q += ` AND strpos(event_id, ` + a.add(f.IDContains) + `) > 0`
	}
	switch f.Status {
	case "":
	case "pending", "running", "retrying":
		q += ` AND id IN (SELECT d.event FROM deliveries d WHERE ` + dueCondition + ` AND d.status = ` + a.add(f.Status) + `)`
	case "paused":
		q += ` AND id IN (SELECT d.event FROM deliveries d WHERE d.status = 'paused')`
	case "dead":
		q += ` AND id IN (SELECT l.event FROM dead_letters l WHERE l.revived_at IS NULL)
			AND EXISTS (SELECT 1 FROM deliveries d WHERE d.event = e.id AND d.status = 'dead')`
	default:
		q += ` AND EXISTS (SELECT 1 FROM deliveries d WHERE d.event = e.id AND d.status = ` + a.add(f.Status) + `)`
	}
	if !f.Since.IsZero() {
		q += ` AND received_at >= ` + a.add(ms(f.Since))
	}
	if !f.Until.IsZero() {
		q += ` AND received_at < ` + a.add(ms(f.Until))
	}
	q += ` ORDER BY id DESC`
	if f.Limit > 0 {
		q += ` LIMIT ` + a.add(f.Limit)
	}
	rows, err := db.pool.Query(ctx, q, a...)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (dedupe.Stored, error) {
		var e dedupe.Stored
		var recv int64
		var last *int64
		err := row.Scan(&e.ID, &e.Source, &e.EventID, &e.Type, &recv, &e.ContentType,
			&e.Redeliveries, &last, &e.Conflicts, &e.BodySize, &e.Swept, &e.OrderKey, &e.OrderVersion, &e.OrderRank)
		e.ReceivedAt, e.LastSeenAt = fromMS(recv), fromNullMS(last)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return out, nil
}

// GetEvent returns one event with its headers and body. It returns an
// error wrapping dedupe.ErrNotFound for an unknown id.
func (db *DB) GetEvent(ctx context.Context, id int64) (dedupe.Stored, error) {
	var e dedupe.Stored
	var recv int64
	var last *int64
	var headers, body []byte
	err := db.pool.QueryRow(ctx, `SELECT id, source, event_id, type, received_at, content_type, headers, body,
		redeliveries, last_seen_at, conflicts, body_size, swept_at IS NOT NULL,
		coalesce(order_key, ''), coalesce(order_version, ''), coalesce(order_rank, ''), secret_index, secret_count FROM events WHERE id = $1`, id).Scan(
		&e.ID, &e.Source, &e.EventID, &e.Type, &recv, &e.ContentType, &headers, &body,
		&e.Redeliveries, &last, &e.Conflicts, &e.BodySize, &e.Swept, &e.OrderKey, &e.OrderVersion, &e.OrderRank,
		&e.SecretIndex, &e.SecretCount)
	if errors.Is(err, pgx.ErrNoRows) {
		return dedupe.Stored{}, fmt.Errorf("event %d: %w", id, dedupe.ErrNotFound)
	}
	if err != nil {
		return dedupe.Stored{}, fmt.Errorf("get event %d: %w", id, err)
	}
	e.ReceivedAt, e.LastSeenAt = fromMS(recv), fromNullMS(last)
	e.Body = body
	if len(headers) > 0 {
		if err := json.Unmarshal(headers, &e.Headers); err != nil {
			return dedupe.Stored{}, fmt.Errorf("get event %d: decode headers: %w", id, err)
		}
	}
	return e, nil
}

// unfinished is true of an event with a delivery still to do or dead: its
// payload and its key stay.
const unfinished = `EXISTS (SELECT 1 FROM deliveries d WHERE d.event = e.id AND d.status IN ('pending', 'running', 'retrying', 'paused', 'dead'))`

// Sweep drops bodies and headers of events received before payloadsBefore
// whose deliveries are all finished, and deletes events (their dedupe keys)
// received before keysBefore. Events with a dead delivery keep both until
// it is replayed or redelivered: a dead letter is work nobody has done.
// The newest event is kept, as the SQLite engine keeps it, so that both
// engines forget the same keys. Each write changes at most batch events,
// until a short batch comes back; it returns how many events it swept and
// deleted.
func (db *DB) Sweep(ctx context.Context, payloadsBefore, keysBefore time.Time, batch int) (swept, deleted int64, err error) {
	now := ms(time.Now())
	for {
		var n int64
		err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
			// The conflicting copies go with the body they differ from.
			return tx.QueryRow(ctx, `WITH swept AS (UPDATE events SET body = NULL, headers = NULL, swept_at = $1
				WHERE id IN (SELECT id FROM events e WHERE received_at < $2 AND swept_at IS NULL AND NOT `+unfinished+`
					ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED) RETURNING id),
				copies AS (DELETE FROM conflicts WHERE event IN (SELECT id FROM swept))
				SELECT count(*) FROM swept`, now, ms(payloadsBefore), batch).Scan(&n)
		})
		if err != nil {
			return swept, deleted, fmt.Errorf("sweep payloads: %w", err)
		}
		swept += n
		if n < int64(batch) {
			break
		}
	}
	for {
		var n int64
		err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `DELETE FROM events WHERE id IN (SELECT id FROM events e
				WHERE received_at < $1 AND NOT `+unfinished+` AND id < (SELECT max(id) FROM events)
				ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)`, ms(keysBefore), batch)
			n = tag.RowsAffected()
			return err
		})
		if err != nil {
			return swept, deleted, fmt.Errorf("sweep dedupe keys: %w", err)
		}
		deleted += n
		if n < int64(batch) {
			break
		}
	}
	return swept, deleted, nil
}

// nullString is s, or NULL for "".
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
