package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"hookbox/dedupe"
)

// The events table is both the raw inbox and the dedupe index: the UNIQUE
// (source, event_id) constraint decides whether an event is new, inside the
// transaction that stores it and its deliveries, so concurrent copies of one
// event cannot both pass.

const (
	// No RETURNING: SQLite buffers returned rows in a temporary b-tree that
	// it builds for every execution, a third of the insert's time.
	// The row count says whether the row went in, the last rowid which.
	// insertEvent stores an event without an order key or a secret that
	// verified it; the three forms below add those columns only where
	// the event has them: each value bound costs every ack.
	insertEvent = `INSERT INTO events (source, event_id, type, received_at, content_type, headers, body, body_size)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source, event_id) DO NOTHING`
	insertEventSigned = `INSERT INTO events (source, event_id, type, received_at, content_type, headers, body, body_size,
		secret_index, secret_count)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source, event_id) DO NOTHING`
	insertEventKeyed = `INSERT INTO events (source, event_id, type, received_at, content_type, headers, body, body_size,
		order_key, order_version, order_rank)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source, event_id) DO NOTHING`
	insertEventKeyedSigned = `INSERT INTO events (source, event_id, type, received_at, content_type, headers, body, body_size,
		order_key, order_version, order_rank, secret_index, secret_count)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (source, event_id) DO NOTHING`
	recordRedelivery = `UPDATE events SET redeliveries = redeliveries + 1, last_seen_at = ?,
		conflicts = conflicts + (body IS NOT NULL AND body != ?)
		WHERE source = ? AND event_id = ?
		RETURNING id, (body IS NOT NULL AND body != ?)`
)

// IngestEvent stores ev with a pending delivery to each of targets, or, if
// its (source, event id) is stored already, counts it as a redelivery and
// puts that event's dead deliveries back to pending (the sender asks
// again); targets are then not looked at. It returns once the transaction
// is durable, and sets ev.ID. An error means nothing was written.
func (db *DB) IngestEvent(ctx context.Context, ev *dedupe.Event, targets []string) (dedupe.Result, error) {
	// Encode outside the writer: everything done inside a write is serial.
	headers, err := json.Marshal(ev.Headers)
	if err != nil {
		return dedupe.Result{}, fmt.Errorf("encode headers: %w", err)
	}
	var res dedupe.Result
	// Once the writer runs it, the write is not abandoned: statements get
	// a context without cancellation, which also spares the driver a
	// watcher goroutine per statement.
	wctx := context.WithoutCancel(ctx)
	err = db.w.write(ctx, func(tx *sql.Tx) error {
		var err error
		res, err = db.ingestTx(wctx, tx, ev, headers, targets)
		return err
	})
	if err != nil {
		return dedupe.Result{}, err
	}
	return res, nil
}

// IngestEvents is IngestEvent for each of evs, all in one transaction
// (all or none), each new one queued for targets: a store loaded in bulk
// (the bench's prefill, tests).
func (db *DB) IngestEvents(ctx context.Context, evs []*dedupe.Event, targets []string) ([]dedupe.Result, error) {
	headers := make([][]byte, len(evs))
	for i, ev := range evs {
		var err error
		if headers[i], err = json.Marshal(ev.Headers); err != nil {
			return nil, fmt.Errorf("encode headers: %w", err)
		}
	}
	out := make([]dedupe.Result, len(evs))
	wctx := context.WithoutCancel(ctx)
	err := db.w.write(ctx, func(tx *sql.Tx) error {
		for i, ev := range evs {
			var err error
			if out[i], err = db.ingestTx(wctx, tx, ev, headers[i], targets); err != nil {
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

func (db *DB) ingestTx(ctx context.Context, tx *sql.Tx, ev *dedupe.Event, headers []byte, targets []string) (dedupe.Result, error) {
	body := ev.Body
	if body == nil {
		body = []byte{} // NULL means swept; an empty body is still a body
	}
	now := ev.ReceivedAt.UnixMilli()
	query, args := insertEvent, []any{ev.Source, ev.EventID, ev.Type, now, ev.ContentType, headers, body, len(body)}
	keyed, signed := ev.OrderKey != "", ev.SecretCount > 0
	if keyed {
		query, args = insertEventKeyed, append(args, ev.OrderKey, nullString(ev.OrderVersion), nullString(ev.OrderRank))
	}
	if signed {
		query, args = insertEventSigned, append(args, ev.SecretIndex, ev.SecretCount)
		if keyed {
			query = insertEventKeyedSigned
		}
	}
	insert, err := db.w.stmt(ctx, tx, query)
	if err != nil {
		return dedupe.Result{}, fmt.Errorf("insert event: %w", err)
	}
	r, err := insert.ExecContext(ctx, args...)
	if err != nil {
		return dedupe.Result{}, fmt.Errorf("insert event: %w", err)
	}
	inserted, err := r.RowsAffected()
	if err != nil {
		return dedupe.Result{}, fmt.Errorf("insert event: %w", err)
	}
	if inserted == 1 {
		id, err := r.LastInsertId()
		if err != nil {
			return dedupe.Result{}, fmt.Errorf("insert event: %w", err)
		}
		ev.ID = id
		if len(targets) > 0 {
			if err := db.enqueueTx(ctx, tx, id, ev.OrderKey, ev.OrderRank, targets, ev.ReceivedAt); err != nil {
				return dedupe.Result{}, fmt.Errorf("enqueue event %d: %w", id, err)
			}
		}
		return dedupe.Result{ID: id}, nil
	}
	// Already stored: the constraint, not a prior SELECT, decided.
	var id, conflict int64
	redeliver, err := db.w.stmt(ctx, tx, recordRedelivery)
	if err != nil {
		return dedupe.Result{}, fmt.Errorf("record redelivery: %w", err)
	}
	err = redeliver.QueryRowContext(ctx, now, body, ev.Source, ev.EventID, body).Scan(&id, &conflict)
	if err != nil {
		return dedupe.Result{}, fmt.Errorf("record redelivery: %w", err)
	}
	ev.ID = id
	res := dedupe.Result{ID: id, Duplicate: true, Conflict: conflict == 1}
	if res.Conflict {
		if err := db.keepConflictTx(ctx, tx, id, ev, headers, body); err != nil {
			return dedupe.Result{}, fmt.Errorf("keep conflicting copy of event %d: %w", id, err)
		}
	}
	if res.Revived, err = db.reviveTx(ctx, tx, id, ev.ReceivedAt); err != nil {
		return dedupe.Result{}, fmt.Errorf("revive event %d: %w", id, err)
	}
	return res, nil
}

// fewEvents is how many events a source may have for ListEvents to read
// them through the source's key rather than walk every event newest first.
var fewEvents = 10000 // a variable for the tests

// ListEvents returns events newest first, without bodies.
func (db *DB) ListEvents(ctx context.Context, f dedupe.Filter) ([]dedupe.Stored, error) {
	q := `SELECT id, source, event_id, type, received_at, content_type, redeliveries, last_seen_at, conflicts, body_size, swept_at,
		coalesce(order_key, ''), coalesce(order_version, ''), coalesce(order_rank, '')
		FROM events e WHERE 1=1`
	var args []any
	if f.Key != "" {
		q += ` AND order_key = ?`
		args = append(args, f.Key)
	}
	if f.Before > 0 {
		q += ` AND id < ?`
		args = append(args, f.Before)
	}
	if f.After > 0 {
		q += ` AND id > ?`
		args = append(args, f.After)
	}
	if f.Type != "" {
		// The unary + keeps the planner walking the id key, newest first,
		// to the limit: no index has the type.
		q += ` AND +type = ?`
		args = append(args, f.Type)
	}
	if f.IDContains != "" {
		q += ` AND instr(event_id, ?) > 0`
		args = append(args, f.IDContains)
	}
	if f.Source != "" {
		// Through the (source, event_id) key, a listing reads every event
		// of the source and sorts them: right for a source with few events,
		// slow for a common one, where walking newest first stops at the
		// limit. A count, bounded, tells which.
		byKey := f.Limit == 0
		if !byKey {
			var n int
			if err := db.reader.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM events WHERE source = ? LIMIT ?)`,
				f.Source, fewEvents).Scan(&n); err != nil {
				return nil, fmt.Errorf("list events: %w", err)
			}
			byKey = n < fewEvents
		}
		if byKey {
			q += ` AND source = ?`
		} else {
			q += ` AND +source = ?`
		}
		args = append(args, f.Source)
	}
	switch f.Status {
	case "":
	case "pending", "running", "retrying":
		// The queued deliveries are the due index: the queue, not the table.
		q += ` AND id IN (SELECT d.event FROM deliveries d INDEXED BY deliveries_due WHERE ` + dueCondition + ` AND d.status = ?)`
		args = append(args, f.Status)
	case "paused":
		// The paused deliveries have an index of their own.
		q += ` AND id IN (SELECT d.event FROM deliveries d INDEXED BY deliveries_paused WHERE d.status = 'paused')`
	case "dead":
		// Dead deliveries are the dead letters not revived.
		q += ` AND id IN (SELECT l.event FROM dead_letters l WHERE l.revived_at IS NULL)
			AND EXISTS (SELECT 1 FROM deliveries d WHERE d.event = e.id AND d.status = 'dead')`
	default:
		q += ` AND EXISTS (SELECT 1 FROM deliveries d WHERE d.event = e.id AND d.status = ?)`
		args = append(args, f.Status)
	}
	if !f.Since.IsZero() {
		q += ` AND received_at >= ?`
		args = append(args, f.Since.UnixMilli())
	}
	if !f.Until.IsZero() {
		q += ` AND received_at < ?`
		args = append(args, f.Until.UnixMilli())
	}
	q += ` ORDER BY id DESC`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	rows, err := db.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	defer rows.Close()
	var out []dedupe.Stored
	for rows.Next() {
		var e dedupe.Stored
		var recv int64
		var last, swept sql.NullInt64
		if err := rows.Scan(&e.ID, &e.Source, &e.EventID, &e.Type, &recv, &e.ContentType,
			&e.Redeliveries, &last, &e.Conflicts, &e.BodySize, &swept, &e.OrderKey, &e.OrderVersion, &e.OrderRank); err != nil {
			return nil, fmt.Errorf("list events: %w", err)
		}
		e.ReceivedAt = time.UnixMilli(recv).UTC()
		if last.Valid {
			e.LastSeenAt = time.UnixMilli(last.Int64).UTC()
		}
		e.Swept = swept.Valid
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return out, nil
}

// GetEvent returns one event with its headers and body. It returns an
// error wrapping dedupe.ErrNotFound for an unknown id.
func (db *DB) GetEvent(ctx context.Context, id int64) (dedupe.Stored, error) {
	var e dedupe.Stored
	var recv int64
	var last, swept sql.NullInt64
	var headers, body []byte
	err := db.reader.QueryRowContext(ctx, `SELECT id, source, event_id, type, received_at, content_type, headers, body,
		redeliveries, last_seen_at, conflicts, body_size, swept_at, coalesce(order_key, ''), coalesce(order_version, ''), coalesce(order_rank, ''),
		secret_index, secret_count
		FROM events WHERE id = ?`, id).Scan(
		&e.ID, &e.Source, &e.EventID, &e.Type, &recv, &e.ContentType, &headers, &body,
		&e.Redeliveries, &last, &e.Conflicts, &e.BodySize, &swept, &e.OrderKey, &e.OrderVersion, &e.OrderRank,
		&e.SecretIndex, &e.SecretCount)
	if errors.Is(err, sql.ErrNoRows) {
		return dedupe.Stored{}, fmt.Errorf("event %d: %w", id, dedupe.ErrNotFound)
	}
	if err != nil {
		return dedupe.Stored{}, fmt.Errorf("get event %d: %w", id, err)
	}
	e.ReceivedAt = time.UnixMilli(recv).UTC()
	if last.Valid {
		e.LastSeenAt = time.UnixMilli(last.Int64).UTC()
	}
	e.Swept = swept.Valid
	e.Body = body
	if len(headers) > 0 {
		if err := json.Unmarshal(headers, &e.Headers); err != nil {
			return dedupe.Stored{}, fmt.Errorf("get event %d: decode headers: %w", id, err)
		}
	}
	return e, nil
}

// sweepPayloadsSQL sweeps one window of ids: each write examines at most
// the window's rows, found through the table's own key, however many events
// before it were swept already. (A walk of events_received from the oldest
// event would pass every swept event, kept for dedupe until keys_after, in
// every batch, holding the store's only writer: seconds with weeks of them.)
const sweepPayloadsSQL = `UPDATE events SET body = NULL, headers = NULL, swept_at = ? WHERE ` + sweepPayloadsWhere

const sweepPayloadsWhere = `id >= ? AND id < ? AND received_at < ? AND swept_at IS NULL
	AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event = events.id AND d.status IN ('pending','running','retrying','paused','dead'))`

// sweepKeysWhere picks the events whose dedupe keys the sweep forgets. The
// newest row stays (its payload may go): SQLite numbers a new row
// max(id)+1, so deleting it would hand its number to the next event, and
// an alert naming the old one would point to a different event. Its id
// keeps deduping until a newer event arrives (README, [retention]).
const sweepKeysWhere = `received_at < ?
	AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event = e.id AND d.status IN ('pending','running','retrying','paused','dead'))
	AND id < (SELECT max(id) FROM events)`

// Sweep drops bodies and headers of events received before payloadsBefore
// whose deliveries are all finished, and deletes events (their dedupe keys)
// received before keysBefore. Events with a dead delivery keep both until
// it is replayed or redelivered: a dead letter is work nobody has done.
// Each write examines at most batch events for payloads and deletes at
// most batch; it returns how many events it swept and deleted.
func (db *DB) Sweep(ctx context.Context, payloadsBefore, keysBefore time.Time, batch int) (swept, deleted int64, err error) {
	now := time.Now().UnixMilli()
	// Ids grow with arrival: the windows run from the oldest event to the
	// last one received before the cutoff. One received later under an
	// earlier clock reading is reached by a later sweep.
	var first, last sql.NullInt64
	err = db.reader.QueryRowContext(ctx, `SELECT (SELECT min(id) FROM events),
		(SELECT id FROM events INDEXED BY events_received WHERE received_at < ? ORDER BY received_at DESC LIMIT 1)`,
		payloadsBefore.UnixMilli()).Scan(&first, &last)
	if err != nil {
		return 0, 0, fmt.Errorf("sweep payloads: %w", err)
	}
	for lo := first.Int64; first.Valid && last.Valid && lo <= last.Int64; lo += int64(batch) {
		// Looked for on a read connection first: most windows of a store
		// in its steady state hold only swept events, and a write for them
		// would commit nothing (an idle hookbox commits nothing).
		var any bool
		if err := db.reader.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM events WHERE `+sweepPayloadsWhere+`)`,
			lo, lo+int64(batch), payloadsBefore.UnixMilli()).Scan(&any); err != nil {
			return swept, deleted, fmt.Errorf("sweep payloads: %w", err)
		}
		if !any {
			continue
		}
		var n int64
		err := db.w.write(ctx, func(tx *sql.Tx) error {
			ctx := context.WithoutCancel(ctx) // see writer.write
			r, err := tx.ExecContext(ctx, sweepPayloadsSQL, now, lo, lo+int64(batch), payloadsBefore.UnixMilli())
			if err != nil {
				return err
			}
			if n, err = r.RowsAffected(); err != nil || n == 0 {
				return err
			}
			// The conflicting copies go with the body they differ from.
			_, err = tx.ExecContext(ctx, sweepConflictsSQL, lo, lo+int64(batch))
			return err
		})
		if err != nil {
			return swept, deleted, fmt.Errorf("sweep payloads: %w", err)
		}
		swept += n
	}
	// Nothing old enough, as on most runs of a young store: no write at all
	// (an idle hookbox commits nothing).
	var more bool
	if err := db.reader.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM events e INDEXED BY events_received WHERE `+sweepKeysWhere+`)`,
		keysBefore.UnixMilli()).Scan(&more); err != nil {
		return swept, deleted, fmt.Errorf("sweep dedupe keys: %w", err)
	}
	for more {
		var n int64
		err := db.w.write(ctx, func(tx *sql.Tx) error {
			ctx := context.WithoutCancel(ctx) // see writer.write
			r, err := tx.ExecContext(ctx, `DELETE FROM events WHERE id IN (SELECT id FROM events e WHERE `+sweepKeysWhere+` LIMIT ?)`,
				keysBefore.UnixMilli(), batch)
			if err != nil {
				return err
			}
			n, err = r.RowsAffected()
			return err
		})
		if err != nil {
			return swept, deleted, fmt.Errorf("sweep dedupe keys: %w", err)
		}
		deleted += n
		more = n == int64(batch) // a full batch: there may be more
	}
	return swept, deleted, nil
}

// nullString is s, or NULL for "".
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
