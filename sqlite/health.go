package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"hookbox/health"
)

// The health monitor's figures come from the tables the store keeps
// anyway (events, deliveries, attempts), through indexes that receiving a
// new event does not touch (0009); its alarms and their notices are the
// health_alarms and health_notices tables.

// SourceCounts counts, per source, the events first received at or after
// since and the duplicates received since then (a duplicate of an earlier
// event counts once: see health.Store).
func (db *DB) SourceCounts(ctx context.Context, since time.Time) ([]health.SourceCount, error) {
	by := map[string]*health.SourceCount{}
	var order []string
	get := func(s string) *health.SourceCount {
		c, ok := by[s]
		if !ok {
			c = &health.SourceCount{Source: s}
			by[s] = c
			order = append(order, s)
		}
		return c
	}
	at := since.UnixMilli()
	rows, err := db.reader.QueryContext(ctx, `SELECT source, count(*), max(received_at) FROM events INDEXED BY events_received
		WHERE received_at >= ? GROUP BY source`, at)
	if err != nil {
		return nil, fmt.Errorf("count events: %w", err)
	}
	for rows.Next() {
		var s string
		var n, last int64
		if err := rows.Scan(&s, &n, &last); err != nil {
			rows.Close()
			return nil, fmt.Errorf("count events: %w", err)
		}
		c := get(s)
		c.Received, c.Last = n, time.UnixMilli(last).UTC()
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("count events: %w", err)
	}
	rows, err = db.reader.QueryContext(ctx, `SELECT source, sum(CASE WHEN received_at >= ? THEN redeliveries ELSE 1 END), max(last_seen_at)
		FROM events INDEXED BY events_last_seen WHERE last_seen_at >= ? GROUP BY source`, at, at)
	if err != nil {
		return nil, fmt.Errorf("count duplicates: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		var n, last int64
		if err := rows.Scan(&s, &n, &last); err != nil {
			return nil, fmt.Errorf("count duplicates: %w", err)
		}
		c := get(s)
		c.Duplicates = n
		if t := time.UnixMilli(last).UTC(); t.After(c.Last) {
			c.Last = t
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count duplicates: %w", err)
	}
	out := make([]health.SourceCount, len(order))
	for i, s := range order {
		out[i] = *by[s]
	}
	return out, nil
}

// LastEvent is when the last event or duplicate from source arrived. It
// reads every stored event of the source: the monitor asks once per
// source, for one silent for a whole window.
func (db *DB) LastEvent(ctx context.Context, source string) (time.Time, bool, error) {
	var recv, seen sql.NullInt64
	err := db.reader.QueryRowContext(ctx, `SELECT max(received_at), max(last_seen_at) FROM events WHERE source = ?`, source).Scan(&recv, &seen)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("last event: %w", err)
	}
	if !recv.Valid {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(max(recv.Int64, seen.Int64)).UTC(), true, nil
}

// QueueAges counts each target's queued deliveries, those older than each
// of edges, and dates the oldest, through the due index: the queue, not
// the table.
func (db *DB) QueueAges(ctx context.Context, now time.Time, edges []time.Duration) ([]health.QueueAge, error) {
	q := `SELECT target, count(*), min(created_at)`
	args := make([]any, len(edges))
	for i, e := range edges {
		q += `, sum(created_at < ?)`
		args[i] = now.Add(-e).UnixMilli()
	}
	q += ` FROM deliveries INDEXED BY deliveries_due WHERE ` + dueCondition + ` GROUP BY target ORDER BY target`
	rows, err := db.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("queue ages: %w", err)
	}
	defer rows.Close()
	var out []health.QueueAge
	for rows.Next() {
		a := health.QueueAge{OlderThan: make([]int64, len(edges))}
		var oldest int64
		dest := []any{&a.Target, &a.Queued, &oldest}
		for i := range a.OlderThan {
			dest = append(dest, &a.OlderThan[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("queue ages: %w", err)
		}
		a.Oldest = time.UnixMilli(oldest).UTC()
		out = append(out, a)
	}
	return out, rows.Err()
}

// doneSince is a target's deliveries done at or after a time, through the
// deliveries_finished index.
const doneSince = `FROM deliveries d INDEXED BY deliveries_finished JOIN events e ON e.id = d.event
	WHERE d.target = ? AND d.status = 'done' AND d.done_at >= ?`

// DoneLatency measures receipt-to-done of target's deliveries done at or
// after since: how many, the 50th and the 99th percentiles.
func (db *DB) DoneLatency(ctx context.Context, target string, since time.Time) (health.Latency, error) {
	var l health.Latency
	at := since.UnixMilli()
	if err := db.reader.QueryRowContext(ctx, `SELECT count(*) `+doneSince, target, at).Scan(&l.Done); err != nil {
		return l, fmt.Errorf("receive to done: %w", err)
	}
	if l.Done == 0 {
		return l, nil
	}
	for _, p := range []struct {
		q   float64
		out *time.Duration
	}{{0.5, &l.P50}, {0.99, &l.P99}} {
		var ms int64
		if err := db.reader.QueryRowContext(ctx, `SELECT d.done_at - e.received_at AS l `+doneSince+` ORDER BY l LIMIT 1 OFFSET ?`,
			target, at, health.Rank(l.Done, p.q)).Scan(&ms); err != nil {
			return l, fmt.Errorf("receive to done: %w", err)
		}
		*p.out = time.Duration(max(ms, 0)) * time.Millisecond
	}
	return l, nil
}

// FailureStreaks counts each target's failed attempts after its last
// success, on its deliveries not done since: the queued ones whose last
// attempt failed (a revived delivery starts afresh) and the dead ones.
// Its cost grows with the queue, as QueueStats's does.
func (db *DB) FailureStreaks(ctx context.Context, targets []string) (map[string]int, error) {
	out := make(map[string]int, len(targets))
	for _, t := range targets {
		out[t] = 0
	}
	rows, err := db.reader.QueryContext(ctx, `WITH t(name, last) AS (
			SELECT value, coalesce((SELECT max(done_at) FROM deliveries INDEXED BY deliveries_finished
				WHERE target = value AND status = 'done'), -1) FROM json_each(?)),
		f(id, target) AS (
			SELECT id, target FROM deliveries INDEXED BY deliveries_due WHERE `+dueCondition+` AND last_error != ''
			UNION ALL
			SELECT d.id, d.target FROM t JOIN deliveries d INDEXED BY deliveries_finished
				ON d.target = t.name AND d.status = 'dead' AND d.done_at > t.last)
		SELECT t.name, count(*) FROM t JOIN f ON f.target = t.name JOIN attempts a ON a.delivery = f.id
		WHERE a.outcome = 'failed' AND a.started_at + a.duration_us / 1000 > t.last GROUP BY t.name`, stringList(targets))
	if err != nil {
		return nil, fmt.Errorf("failed attempts in a row: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		var n int
		if err := rows.Scan(&t, &n); err != nil {
			return nil, fmt.Errorf("failed attempts in a row: %w", err)
		}
		out[t] = n
	}
	return out, rows.Err()
}

// stringList is names as a JSON array for json_each.
func stringList(names []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q", n) // Go's quoting is JSON's for the names a config allows
	}
	b.WriteByte(']')
	return b.String()
}

// Alarms lists every alarm that has ever fired.
func (db *DB) Alarms(ctx context.Context) ([]health.Alarm, error) {
	rows, err := db.reader.QueryContext(ctx, `SELECT alarm, subject, firing, since, fired_at, value, bound FROM health_alarms ORDER BY alarm, subject`)
	if err != nil {
		return nil, fmt.Errorf("list alarms: %w", err)
	}
	defer rows.Close()
	var out []health.Alarm
	for rows.Next() {
		var a health.Alarm
		var since, fired int64
		if err := rows.Scan(&a.Kind, &a.Subject, &a.Firing, &since, &fired, &a.Value, &a.Bound); err != nil {
			return nil, fmt.Errorf("list alarms: %w", err)
		}
		a.Since, a.FiredAt = time.UnixMilli(since).UTC(), time.UnixMilli(fired).UTC()
		out = append(out, a)
	}
	return out, rows.Err()
}

// SetAlarm moves an alarm to a.Firing only from the other state, with its
// notice when notify, in one transaction, and reports whether it did.
func (db *DB) SetAlarm(ctx context.Context, a health.Alarm, notify bool) (bool, error) {
	var changed bool
	err := db.w.write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see writer.write
		at := a.Since.UnixMilli()
		var r sql.Result
		var err error
		if a.Firing {
			r, err = tx.ExecContext(ctx, `INSERT INTO health_alarms (alarm, subject, firing, since, fired_at, value, bound) VALUES (?, ?, 1, ?, ?, ?, ?)
				ON CONFLICT (alarm, subject) DO UPDATE SET firing = 1, since = excluded.since, fired_at = excluded.fired_at,
					value = excluded.value, bound = excluded.bound WHERE health_alarms.firing = 0`,
				a.Kind, a.Subject, at, at, a.Value, a.Bound)
		} else {
			r, err = tx.ExecContext(ctx, `UPDATE health_alarms SET firing = 0, since = ?, value = ?, bound = ? WHERE alarm = ? AND subject = ? AND firing = 1`,
				at, a.Value, a.Bound, a.Kind, a.Subject)
		}
		if err != nil {
			return err
		}
		n, err := r.RowsAffected()
		if err != nil {
			return err
		}
		changed = n == 1
		if !changed || !notify {
			return nil
		}
		state := "resolved"
		if a.Firing {
			state = "firing"
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO health_notices (alarm, subject, state, value, bound, fired_at, at, due_at)
			SELECT alarm, subject, ?, value, bound, fired_at, since, since FROM health_alarms WHERE alarm = ? AND subject = ?`,
			state, a.Kind, a.Subject)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("set alarm: %w", err)
	}
	return changed, nil
}

// DueNotices returns up to limit notices due at now, oldest first, none
// behind an earlier notice of its alarm still to be sent.
func (db *DB) DueNotices(ctx context.Context, now time.Time, limit int) ([]health.Notice, error) {
	rows, err := db.reader.QueryContext(ctx, `SELECT id, alarm, subject, state = 'firing', value, bound, fired_at, at, tries
		FROM health_notices n WHERE due_at IS NOT NULL AND due_at <= ?
			AND NOT EXISTS (SELECT 1 FROM health_notices p WHERE p.alarm = n.alarm AND p.subject = n.subject AND p.id < n.id AND p.due_at IS NOT NULL)
		ORDER BY id LIMIT ?`, now.UnixMilli(), limit)
	if err != nil {
		return nil, fmt.Errorf("due notices: %w", err)
	}
	defer rows.Close()
	var out []health.Notice
	for rows.Next() {
		var n health.Notice
		var fired, at int64
		if err := rows.Scan(&n.ID, &n.Kind, &n.Subject, &n.Firing, &n.Value, &n.Bound, &fired, &at, &n.Tries); err != nil {
			return nil, fmt.Errorf("due notices: %w", err)
		}
		n.FiredAt, n.At = time.UnixMilli(fired).UTC(), time.UnixMilli(at).UTC()
		out = append(out, n)
	}
	return out, rows.Err()
}

// RecordNotice records the outcome of one send of a notice: sent, given
// up, or due again at o.Next.
func (db *DB) RecordNotice(ctx context.Context, o health.NoticeOutcome) error {
	err := db.w.write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see writer.write
		var err error
		switch {
		case o.Err == nil:
			_, err = tx.ExecContext(ctx, `UPDATE health_notices SET tries = tries + 1, due_at = NULL, sent_at = ?, error = '' WHERE id = ?`, o.At.UnixMilli(), o.ID)
		case o.GaveUp:
			_, err = tx.ExecContext(ctx, `UPDATE health_notices SET tries = tries + 1, due_at = NULL, error = ? WHERE id = ?`, o.Err.Error(), o.ID)
		default:
			_, err = tx.ExecContext(ctx, `UPDATE health_notices SET tries = tries + 1, due_at = ?, error = ? WHERE id = ?`, o.Next.UnixMilli(), o.Err.Error(), o.ID)
		}
		return err
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("record notice %d: %w", o.ID, err)
	}
	return err
}
