package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/health"
)

// The health monitor's figures come from the tables the store keeps
// anyway (events, deliveries, attempts), through indexes that receiving a
// new event does not touch (0004); its alarms and their notices are the
// health_alarms and health_notices tables.

// SourceCounts counts, per source, the events first received at or after
// since and the duplicates received since then (a duplicate of an earlier
// event counts once: see health.Store).
func (db *DB) SourceCounts(ctx context.Context, since time.Time) ([]health.SourceCount, error) {
	rows, err := db.pool.Query(ctx, `WITH n AS (SELECT source, count(*) AS received, max(received_at) AS last FROM events
			WHERE received_at >= $1 GROUP BY source),
		d AS (SELECT source, sum(CASE WHEN received_at >= $1 THEN redeliveries ELSE 1 END)::bigint AS dups, max(last_seen_at) AS last
			FROM events WHERE last_seen_at >= $1 GROUP BY source)
		SELECT coalesce(n.source, d.source), coalesce(n.received, 0), coalesce(d.dups, 0), greatest(n.last, d.last)
		FROM n FULL JOIN d ON d.source = n.source ORDER BY 1`, ms(since))
	if err != nil {
		return nil, fmt.Errorf("count receipts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (health.SourceCount, error) {
		var c health.SourceCount
		var last int64
		err := row.Scan(&c.Source, &c.Received, &c.Duplicates, &last)
		c.Last = fromMS(last)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("count receipts: %w", err)
	}
	return out, nil
}

// LastEvent is when the last event or duplicate from source arrived. It
// reads every stored event of the source: the monitor asks once per
// source, for one silent for a whole window.
func (db *DB) LastEvent(ctx context.Context, source string) (time.Time, bool, error) {
	var recv, seen *int64
	if err := db.pool.QueryRow(ctx, `SELECT max(received_at), max(last_seen_at) FROM events WHERE source = $1`, source).Scan(&recv, &seen); err != nil {
		return time.Time{}, false, fmt.Errorf("last event: %w", err)
	}
	if recv == nil {
		return time.Time{}, false, nil
	}
	last := *recv
	if seen != nil {
		last = max(last, *seen)
	}
	return fromMS(last), true, nil
}

// QueueAges counts each target's queued deliveries, those older than each
// of edges, and dates the oldest: the queue, not the table.
func (db *DB) QueueAges(ctx context.Context, now time.Time, edges []time.Duration) ([]health.QueueAge, error) {
	var a args
	q := `SELECT target, count(*), min(created_at)`
	for _, e := range edges {
		q += `, count(*) FILTER (WHERE created_at < ` + a.add(ms(now.Add(-e))) + `)`
	}
	q += ` FROM deliveries WHERE ` + dueCondition + ` GROUP BY target ORDER BY target`
	rows, err := db.pool.Query(ctx, q, a...)
	if err != nil {
		return nil, fmt.Errorf("queue ages: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (health.QueueAge, error) {
		qa := health.QueueAge{OlderThan: make([]int64, len(edges))}
		var oldest int64
		dest := []any{&qa.Target, &qa.Queued, &oldest}
		for i := range qa.OlderThan {
			dest = append(dest, &qa.OlderThan[i])
		}
		err := row.Scan(dest...)
		qa.Oldest = fromMS(oldest)
		return qa, err
	})
	if err != nil {
		return nil, fmt.Errorf("queue ages: %w", err)
	}
	return out, nil
}

// DoneLatency measures receipt-to-done of target's deliveries done at or
// after since: how many, the 50th and the 99th percentiles.
func (db *DB) DoneLatency(ctx context.Context, target string, since time.Time) (health.Latency, error) {
	var l health.Latency
	const done = `FROM deliveries d JOIN events e ON e.id = d.event WHERE d.target = $1 AND d.status = 'done' AND d.done_at >= $2`
	if err := db.pool.QueryRow(ctx, `SELECT count(*) `+done, target, ms(since)).Scan(&l.Done); err != nil {
		return l, fmt.Errorf("receive to done: %w", err)
	}
	if l.Done == 0 {
		return l, nil
	}
	var p50, p99 int64
	if err := db.pool.QueryRow(ctx, `SELECT (SELECT d.done_at - e.received_at AS l `+done+` ORDER BY l OFFSET $3 LIMIT 1),
		(SELECT d.done_at - e.received_at AS l `+done+` ORDER BY l OFFSET $4 LIMIT 1)`,
		target, ms(since), health.Rank(l.Done, 0.5), health.Rank(l.Done, 0.99)).Scan(&p50, &p99); err != nil {
		return l, fmt.Errorf("receive to done: %w", err)
	}
	l.P50, l.P99 = time.Duration(max(p50, 0))*time.Millisecond, time.Duration(max(p99, 0))*time.Millisecond
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
	rows, err := db.pool.Query(ctx, `WITH t AS (
			SELECT name, coalesce((SELECT max(done_at) FROM deliveries WHERE target = name AND status = 'done'), -1) AS last
			FROM unnest($1::text[]) AS name),
		f AS (
			SELECT id, target FROM deliveries WHERE `+dueCondition+` AND last_error <> ''
			UNION ALL
			SELECT d.id, d.target FROM t JOIN deliveries d ON d.target = t.name AND d.status = 'dead' AND d.done_at > t.last)
		SELECT t.name, count(*) FROM t JOIN f ON f.target = t.name JOIN attempts a ON a.delivery = f.id
		WHERE a.outcome = 'failed' AND a.started_at + a.duration_us / 1000 > t.last GROUP BY t.name`, targets)
	if err != nil {
		return nil, fmt.Errorf("failed attempts in a row: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		var n int64
		if err := rows.Scan(&t, &n); err != nil {
			return nil, fmt.Errorf("failed attempts in a row: %w", err)
		}
		out[t] = int(n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("failed attempts in a row: %w", err)
	}
	return out, nil
}

// Alarms lists every alarm that has ever fired.
func (db *DB) Alarms(ctx context.Context) ([]health.Alarm, error) {
	rows, err := db.pool.Query(ctx, `SELECT alarm, subject, firing, since, fired_at, value, bound FROM health_alarms ORDER BY alarm, subject`)
	if err != nil {
		return nil, fmt.Errorf("list alarms: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (health.Alarm, error) {
		var a health.Alarm
		var since, fired int64
		err := row.Scan(&a.Kind, &a.Subject, &a.Firing, &since, &fired, &a.Value, &a.Bound)
		a.Since, a.FiredAt = fromMS(since), fromMS(fired)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("list alarms: %w", err)
	}
	return out, nil
}

// SetAlarm moves an alarm to a.Firing only from the other state, with its
// notice when notify, in one transaction, and reports whether it did. Two
// replicas that see the same change at once: the row lock lets one move
// it, and the other's condition no longer holds.
func (db *DB) SetAlarm(ctx context.Context, a health.Alarm, notify bool) (bool, error) {
	var changed bool
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		at := ms(a.Since)
		var n int64
		if a.Firing {
			tag, err := tx.Exec(ctx, `INSERT INTO health_alarms (alarm, subject, firing, since, fired_at, value, bound) VALUES ($1, $2, true, $3, $3, $4, $5)
				ON CONFLICT (alarm, subject) DO UPDATE SET firing = true, since = excluded.since, fired_at = excluded.fired_at,
					value = excluded.value, bound = excluded.bound WHERE NOT health_alarms.firing`,
				a.Kind, a.Subject, at, a.Value, a.Bound)
			if err != nil {
				return err
			}
			n = tag.RowsAffected()
		} else {
			tag, err := tx.Exec(ctx, `UPDATE health_alarms SET firing = false, since = $1, value = $2, bound = $3 WHERE alarm = $4 AND subject = $5 AND firing`,
				at, a.Value, a.Bound, a.Kind, a.Subject)
			if err != nil {
				return err
			}
			n = tag.RowsAffected()
		}
		changed = n == 1
		if !changed || !notify {
			return nil
		}
		state := "resolved"
		if a.Firing {
			state = "firing"
		}
		_, err := tx.Exec(ctx, `INSERT INTO health_notices (alarm, subject, state, value, bound, fired_at, at, due_at)
			SELECT alarm, subject, $1, value, bound, fired_at, since, since FROM health_alarms WHERE alarm = $2 AND subject = $3`,
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
	rows, err := db.pool.Query(ctx, `SELECT id, alarm, subject, state = 'firing', value, bound, fired_at, at, tries
		FROM health_notices n WHERE due_at IS NOT NULL AND due_at <= $1
			AND NOT EXISTS (SELECT 1 FROM health_notices p WHERE p.alarm = n.alarm AND p.subject = n.subject AND p.id < n.id AND p.due_at IS NOT NULL)
		ORDER BY id LIMIT $2`, ms(now), limit)
	if err != nil {
		return nil, fmt.Errorf("due notices: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (health.Notice, error) {
		var n health.Notice
		var fired, at int64
		err := row.Scan(&n.ID, &n.Kind, &n.Subject, &n.Firing, &n.Value, &n.Bound, &fired, &at, &n.Tries)
		n.FiredAt, n.At = fromMS(fired), fromMS(at)
		return n, err
	})
	if err != nil {
		return nil, fmt.Errorf("due notices: %w", err)
	}
	return out, nil
}

// RecordNotice records the outcome of one send of a notice: sent, given
// up, or due again at o.Next.
func (db *DB) RecordNotice(ctx context.Context, o health.NoticeOutcome) error {
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		switch {
		case o.Err == nil:
			_, err = tx.Exec(ctx, `UPDATE health_notices SET tries = tries + 1, due_at = NULL, sent_at = $1, error = '' WHERE id = $2`, ms(o.At), o.ID)
		case o.GaveUp:
			_, err = tx.Exec(ctx, `UPDATE health_notices SET tries = tries + 1, due_at = NULL, error = $1 WHERE id = $2`, o.Err.Error(), o.ID)
		default:
			_, err = tx.Exec(ctx, `UPDATE health_notices SET tries = tries + 1, due_at = $1, error = $2 WHERE id = $3`, ms(o.Next), o.Err.Error(), o.ID)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("record notice %s: %w", strconv.FormatInt(o.ID, 10), err)
	}
	return nil
}
