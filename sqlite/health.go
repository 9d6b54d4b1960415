package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
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

// Receive-to-done is read from the attempts: each delivery done leaves an
// ok attempt, appended as it completes, so that their rowids follow the
// time they ended, and a window's first attempt is found by searching the
// rowids rather than through an index written with every delivery
// (migration 0011). An attempt ended at started_at + duration.
const attemptEnd = `a.started_at + a.duration_us / 1000`

// attemptSlack is how far out of order in time the attempts may have been
// appended (workers' clocks read a moment apart, a batch committed in the
// order its completions came): the search starts that much earlier, and
// the rows are then filtered by their own end.
const attemptSlack = time.Minute

// firstAttemptEnding is the rowid from which the attempts end at or after
// at (less attemptSlack), by a binary search of point reads of the rowid;
// past the last attempt if none does.
func (db *DB) firstAttemptEnding(ctx context.Context, at time.Time) (int64, error) {
	var lo, hi sql.NullInt64
	if err := db.reader.QueryRowContext(ctx, `SELECT min(id), max(id) FROM attempts`).Scan(&lo, &hi); err != nil {
		return 0, err
	}
	if !lo.Valid {
		return 0, nil
	}
	key := at.Add(-attemptSlack).UnixMilli()
	// The first attempt at or after id, and when it ended.
	probe := func(id int64) (int64, int64, error) {
		var got, end int64
		err := db.reader.QueryRowContext(ctx, `SELECT a.id, `+attemptEnd+` FROM attempts a WHERE a.id >= ? ORDER BY a.id LIMIT 1`, id).Scan(&got, &end)
		return got, end, err
	}
	l, h := lo.Int64, hi.Int64+1 // the answer is in [l, h]
	for l < h {
		mid := l + (h-l)/2
		id, end, err := probe(mid)
		if errors.Is(err, sql.ErrNoRows) {
			h = mid // the sweep deleted them meanwhile: none from mid on
			continue
		}
		if err != nil {
			return 0, err
		}
		if end >= key {
			h = mid
		} else {
			l = id + 1
		}
	}
	return l, nil
}

// doneFrom is a target's ok attempts from a rowid on that ended at or
// after a time, each joined to its delivery: the attempts drive the join.
const doneFrom = `FROM attempts a CROSS JOIN deliveries d ON d.id = a.delivery
	WHERE a.id >= ? AND a.outcome = 'ok' AND ` + attemptEnd + ` >= ? AND d.target = ?`

// DoneLatency measures receipt-to-done of target's deliveries done at or
// after since: how many, the 50th and the 99th percentiles.
func (db *DB) DoneLatency(ctx context.Context, target string, since time.Time) (health.Latency, error) {
	var l health.Latency
	from, err := db.firstAttemptEnding(ctx, since)
	if err != nil {
		return l, fmt.Errorf("receive to done: %w", err)
	}
	at := since.UnixMilli()
	if err := db.reader.QueryRowContext(ctx, `SELECT count(*) `+doneFrom, from, at, target).Scan(&l.Done); err != nil {
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
		if err := db.reader.QueryRowContext(ctx, `SELECT `+attemptEnd+` - e.received_at AS l `+
			strings.Replace(doneFrom, `WHERE`, `CROSS JOIN events e ON e.id = d.event WHERE`, 1)+` ORDER BY l LIMIT 1 OFFSET ?`,
			from, at, target, health.Rank(l.Done, p.q)).Scan(&ms); err != nil {
			return l, fmt.Errorf("receive to done: %w", err)
		}
		*p.out = time.Duration(max(ms, 0)) * time.Millisecond
	}
	return l, nil
}

// lastDone is each target's last success (its latest delivery done, unix
// ms), kept as deliveries complete: the store is this process's alone (the
// lock), and only a completion makes a delivery done. It is read from the
// table once, on the first question (a scan of the deliveries), and from
// then on only kept.
type lastDone struct {
	mu     sync.Mutex
	loaded bool
	at     map[string]int64
}

// note records a delivery of target done at ms, once it is durable.
func (l *lastDone) note(target string, ms int64) {
	l.mu.Lock()
	if l.at == nil {
		l.at = map[string]int64{}
	}
	if ms > l.at[target] {
		l.at[target] = ms
	}
	l.mu.Unlock()
}

// lastSuccesses is each of targets' last success, -1 where none.
func (db *DB) lastSuccesses(ctx context.Context, targets []string) (map[string]int64, error) {
	db.done.mu.Lock()
	loaded := db.done.loaded
	db.done.mu.Unlock()
	if !loaded {
		// Outside the lock: completions go on meanwhile, and note keeps
		// the later of theirs and the table's.
		rows, err := db.reader.QueryContext(ctx, `SELECT target, max(done_at) FROM deliveries WHERE status = 'done' GROUP BY target`)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var t string
			var ms int64
			if err := rows.Scan(&t, &ms); err != nil {
				return nil, err
			}
			db.done.note(t, ms)
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		db.done.mu.Lock()
		db.done.loaded = true
		db.done.mu.Unlock()
	}
	out := make(map[string]int64, len(targets))
	db.done.mu.Lock()
	defer db.done.mu.Unlock()
	for _, t := range targets {
		if ms, ok := db.done.at[t]; ok {
			out[t] = ms
		} else {
			out[t] = -1
		}
	}
	return out, nil
}

// failureStreaksSQL counts the failed attempts of each target (name) after
// its last success (last, unix ms; -1 for none), a JSON array of [name,
// last] pairs: those of its queued deliveries whose last attempt failed
// and of its dead ones since.
const failureStreaksSQL = `WITH t(name, last) AS (
			SELECT value ->> 0, value ->> 1 FROM json_each(?)),
		f(id, target) AS (
			SELECT id, target FROM deliveries INDEXED BY deliveries_due WHERE ` + dueCondition + ` AND last_error != ''
			UNION ALL
			SELECT DISTINCT d.id, d.target FROM t CROSS JOIN dead_letters l ON l.target = t.name AND l.revived_at IS NULL
				CROSS JOIN deliveries d ON d.id = l.delivery AND d.status = 'dead' AND d.done_at > t.last)
		SELECT t.name, count(*) FROM t JOIN f ON f.target = t.name JOIN attempts a ON a.delivery = f.id
		WHERE a.outcome = 'failed' AND ` + attemptEnd + ` > t.last GROUP BY t.name`

// FailureStreaks counts each target's failed attempts after its last
// success, on its deliveries not done since: the queued ones whose last
// attempt failed (a revived delivery starts afresh) and the dead ones
// (found through their dead letters). Its cost grows with the queue, as
// QueueStats's does.
func (db *DB) FailureStreaks(ctx context.Context, targets []string) (map[string]int, error) {
	out := make(map[string]int, len(targets))
	for _, t := range targets {
		out[t] = 0
	}
	last, err := db.lastSuccesses(ctx, targets)
	if err != nil {
		return nil, fmt.Errorf("failed attempts in a row: %w", err)
	}
	pairs := make([][2]any, 0, len(targets))
	for _, t := range targets {
		pairs = append(pairs, [2]any{t, last[t]})
	}
	list, err := json.Marshal(pairs)
	if err != nil {
		return nil, fmt.Errorf("failed attempts in a row: %w", err)
	}
	rows, err := db.reader.QueryContext(ctx, failureStreaksSQL, string(list))
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
