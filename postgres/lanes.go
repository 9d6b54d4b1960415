package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/order"
	"hookbox/queue"
)

// The lanes table: one row per (target, order key) of an ordered target,
// holding its head (the one delivery of the lane that may be due), the
// version delivered last and since when the head has been failing. The
// lane logic is queue's (EnterLane, AdvanceLane); laneTx gives it its
// steps. Each step runs under the lane row's lock (LockLane, taken before
// any delivery row of the lane), and the head is locked before it is
// parked or read, so that transactions of several replicas change a lane
// one at a time, and a claim, which takes due rows FOR UPDATE SKIP
// LOCKED, never takes a head that is being parked.

// parkedSQL is the run_at of a delivery waiting behind its lane's head,
// 2^62 ms: past any claim's "run_at <= now", and the deliveries_lane
// index's condition (migration 0002), word for word.
const (
	parked    = int64(1) << 62
	parkedSQL = `4611686018427387904`
)

// SetOrder tells the store how each ordered target orders its deliveries
// (the others, absent, are not ordered): a delivery to one of them is
// queued in its event's lane. Call it before the store takes events.
func (db *DB) SetOrder(lanes map[string]order.Lane) { db.order.Set(lanes) }

const (
	enqueueLaneSQL = `INSERT INTO deliveries (event, target, status, run_at, created_at, lane, rank) VALUES ($1, $2, 'pending', $3, $4, $5, $6) RETURNING id`
	// leadLaneSQL makes a new delivery its lane's head in one statement
	// where the lane is new, or empty and the delivery not stale (the
	// stale test applies when $5 is true); it changes no row otherwise,
	// and holds the lane's lock either way.
	leadLaneSQL = `INSERT INTO lanes AS l (target, key, head, held_since) VALUES ($1, $2, $3, $4)
		ON CONFLICT (target, key) DO UPDATE SET head = EXCLUDED.head, held_since = EXCLUDED.held_since, blocked_since = NULL
		WHERE l.head IS NULL AND (NOT $5 OR $6 = '' OR l.last_rank = '' OR $6 > l.last_rank)`
	// DO UPDATE, not DO NOTHING: it locks the row, new or not.
	lockLaneSQL = `INSERT INTO lanes AS l (target, key) VALUES ($1, $2) ON CONFLICT (target, key) DO UPDATE SET target = l.target
		RETURNING coalesce(head, 0), last_rank, last_version, last_event, blocked_since, held_since`
	saveLaneSQL = `UPDATE lanes SET head = nullif($1::bigint, 0), last_rank = $2, last_version = $3, last_event = $4, blocked_since = $5, held_since = $6
		WHERE target = $7 AND key = $8`
	laneItemSQL = `SELECT d.event, d.rank, coalesce(e.order_version, ''), d.forced, d.status FROM deliveries d JOIN events e ON e.id = d.event
		WHERE d.id = $1 FOR UPDATE OF d`
	parkSQL   = `UPDATE deliveries SET run_at = ` + parkedSQL + ` WHERE id = $1 AND status IN ('pending', 'retrying', 'paused')`
	unparkSQL = `UPDATE deliveries SET run_at = $1 WHERE id = $2 AND status IN ('pending', 'retrying', 'paused')`
	skipSet   = `UPDATE deliveries SET status = 'skipped', skip_reason = $1, done_at = $2, run_at = $2, forced = false`
	skipSQL   = skipSet + ` WHERE id = $3 AND status IN ('pending', 'retrying', 'paused')`
	// waitingSQL is the condition of a lane's waiting deliveries, through
	// deliveries_lane; the target and key are $3 and $4.
	waitingSQL     = `target = $3 AND lane = $4 AND run_at = ` + parkedSQL + ` AND status IN ('pending', 'retrying', 'paused')`
	skipStaleSQL   = skipSet + ` WHERE ` + waitingSQL + ` AND NOT forced AND rank <> '' AND rank <= $5`
	skipWaitingSQL = skipSet + ` WHERE ` + waitingSQL + ` AND NOT forced AND id <> $5`
	nextWhere      = `target = $1 AND lane = $2 AND run_at = ` + parkedSQL + ` AND status IN ('pending', 'retrying', 'paused')`
	nextSQL        = `SELECT id FROM deliveries WHERE ` + nextWhere + ` ORDER BY rank, id LIMIT 1`
	nextForcedSQL  = `SELECT id FROM deliveries WHERE ` + nextWhere + ` AND forced ORDER BY rank, id LIMIT 1`
	nextNewestSQL  = `SELECT id FROM deliveries WHERE ` + nextWhere + ` ORDER BY rank DESC, id DESC LIMIT 1`
)

// advanceSetSQL is AdvanceLane and PromoteLane of a fifo lane (lanes AS
// l) whose head $4 was just delivered or died, under the lane's lock: it
// makes the lane's first waiting delivery its head, held since $1 (head
// and held_since NULL where none waits), and records the version $6 and
// $9 (if $5) and the event $8 (if $7) delivered last, as read with the
// event when it was claimed (Job.LaneRank, Job.LaneVersion). It changes
// no row where the lane is gone or its head is another delivery (the
// target's order changed).
const advanceSetSQL = `UPDATE lanes AS l SET (head, held_since) = (SELECT w.id, $1::bigint FROM deliveries w
			WHERE w.target = $2 AND w.lane = $3 AND w.run_at = ` + parkedSQL + ` AND w.status IN ('pending', 'retrying', 'paused')
			ORDER BY w.rank, w.id LIMIT 1),
		blocked_since = NULL,
		last_rank = CASE WHEN $5 THEN $6::text ELSE l.last_rank END,
		last_version = CASE WHEN $5 THEN $9::text ELSE l.last_version END,
		last_event = CASE WHEN $7 THEN $8::bigint ELSE l.last_event END
	WHERE l.target = $2 AND l.key = $3 AND l.head = $4::bigint`

// advanceFIFOSQL advances the lane (advanceSetSQL) and returns whether j
// was its head and its new head, left parked (0 for none): the caller
// claims it for itself or makes it due.
const advanceFIFOSQL = `WITH adv AS (` + advanceSetSQL + ` RETURNING coalesce(l.head, 0) AS head)
	SELECT head FROM adv`

// promoteFIFOSQL advances the lane and makes its new head due at $1 in
// the same statement, and returns whether j was its head (the count) and
// whether one was made due.
const promoteFIFOSQL = `WITH adv AS (` + advanceSetSQL + ` RETURNING l.head),
	up AS (UPDATE deliveries SET run_at = $1 WHERE id = (SELECT head FROM adv) AND run_at = ` + parkedSQL + `
		AND status IN ('pending', 'retrying', 'paused') RETURNING id)
	SELECT (SELECT count(*) FROM adv), (SELECT count(*) FROM up)`

// lockFIFOSQL takes a lane's lock, as LockLane does, where the lane is
// not read (advanceFIFOSQL). A lane whose row is gone has no head to
// advance.
const lockFIFOSQL = `SELECT 1 FROM lanes WHERE target = $1 AND key = $2 FOR UPDATE`

// claimParkedSQL claims a lane's new head where it waits, parked, as a
// claim does.
const claimParkedSQL = `UPDATE deliveries SET status = 'running', attempts = attempts + 1, run_at = $1, lease_token = nextval('lease_tokens')
	WHERE id = $2 AND status IN ('pending', 'retrying') AND run_at = ` + parkedSQL + `
	RETURNING id, event, target, attempts, lease_token, coalesce(lane, '')`

// advanceFIFOTx advances the fifo lane of j, delivered (done) or dead,
// whose lock the caller holds: the lane logic's steps for these outcomes.
// It claims the lane's next delivery for the caller (lease) or makes it
// due (in the same statement), and reports whether it made one due.
func advanceFIFOTx(ctx context.Context, tx pgx.Tx, j *queue.Job, done bool, lease time.Duration, now time.Time) (promoted bool, err error) {
	ranked := done && j.LaneRank != ""
	args := []any{ms(now), j.Target, j.Lane, j.Delivery, ranked, j.LaneRank, done, j.Event, j.LaneVersion}
	if lease <= 0 {
		var heads, due int64
		if err := tx.QueryRow(ctx, promoteFIFOSQL, args...).Scan(&heads, &due); err != nil {
			return false, fmt.Errorf("advance lane %s/%s: %w", j.Target, j.Lane, err)
		}
		return due == 1, nil
	}
	var next int64
	err = tx.QueryRow(ctx, advanceFIFOSQL, args...).Scan(&next)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && next == 0) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("advance lane %s/%s: %w", j.Target, j.Lane, err)
	}
	n := &queue.Job{}
	err = tx.QueryRow(ctx, claimParkedSQL, ms(now.Add(lease)), next).Scan(&n.Delivery, &n.Event, &n.Target, &n.Attempt, &n.Token, &n.Lane)
	if err == nil {
		if err := loadEvents(ctx, tx, []*queue.Job{n}); err != nil {
			return false, err
		}
		j.Next = n
		return false, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return false, fmt.Errorf("claim delivery %d: %w", next, err)
	}
	if _, err := tx.Exec(ctx, unparkSQL, ms(now), next); err != nil {
		return false, err
	}
	return true, nil
}

// laneTx is queue.LaneTx on one transaction.
type laneTx struct {
	ctx context.Context
	tx  pgx.Tx
}

func msOrNil(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	v := ms(t)
	return &v
}

func (t *laneTx) LockLane(target, key string) (queue.LaneState, error) {
	var s queue.LaneState
	var blocked, held *int64
	if err := t.tx.QueryRow(t.ctx, lockLaneSQL, target, key).Scan(&s.Head, &s.LastRank, &s.LastVersion, &s.LastEvent, &blocked, &held); err != nil {
		return queue.LaneState{}, fmt.Errorf("lane %s/%s: %w", target, key, err)
	}
	s.BlockedSince, s.HeldSince = fromNullMS(blocked), fromNullMS(held)
	return s, nil
}

func (t *laneTx) SaveLane(target, key string, s queue.LaneState) error {
	if _, err := t.tx.Exec(t.ctx, saveLaneSQL, s.Head, s.LastRank, s.LastVersion, s.LastEvent, msOrNil(s.BlockedSince), msOrNil(s.HeldSince), target, key); err != nil {
		return fmt.Errorf("save lane %s/%s: %w", target, key, err)
	}
	return nil
}

func (t *laneTx) Item(id int64) (queue.LaneItem, error) {
	it := queue.LaneItem{ID: id}
	var status string
	err := t.tx.QueryRow(t.ctx, laneItemSQL, id).Scan(&it.Event, &it.Rank, &it.Version, &it.Forced, &status)
	if errors.Is(err, pgx.ErrNoRows) {
		return it, nil // gone: not queued
	}
	if err != nil {
		return queue.LaneItem{}, fmt.Errorf("lane delivery %d: %w", id, err)
	}
	it.Running = status == queue.Running
	it.Queued = it.Running || status == queue.Pending || status == queue.Retrying || status == queue.Paused
	return it, nil
}

func (t *laneTx) Park(id int64) error {
	_, err := t.tx.Exec(t.ctx, parkSQL, id)
	return err
}

func (t *laneTx) Unpark(id int64, at time.Time) error {
	_, err := t.tx.Exec(t.ctx, unparkSQL, ms(at), id)
	return err
}

func (t *laneTx) Skip(id int64, reason string, now time.Time) error {
	_, err := t.tx.Exec(t.ctx, skipSQL, reason, ms(now), id)
	return err
}

func (t *laneTx) SkipStale(target, key, rank, reason string, now time.Time) (int64, error) {
	tag, err := t.tx.Exec(t.ctx, skipStaleSQL, reason, ms(now), target, key, rank)
	return tag.RowsAffected(), err
}

func (t *laneTx) SkipWaiting(target, key string, keep int64, reason string, now time.Time) (int64, error) {
	tag, err := t.tx.Exec(t.ctx, skipWaitingSQL, reason, ms(now), target, key, keep)
	return tag.RowsAffected(), err
}

func (t *laneTx) Next(target, key string, forced, newest bool) (queue.LaneItem, bool, error) {
	query := nextSQL
	switch {
	case forced:
		query = nextForcedSQL
	case newest:
		query = nextNewestSQL
	}
	var id int64
	if err := t.tx.QueryRow(t.ctx, query, target, key).Scan(&id); errors.Is(err, pgx.ErrNoRows) {
		return queue.LaneItem{}, false, nil
	} else if err != nil {
		return queue.LaneItem{}, false, fmt.Errorf("next of lane %s/%s: %w", target, key, err)
	}
	it, err := t.Item(id)
	return it, err == nil, err
}

// enqueueLanesTx queues event's deliveries to the ordered targets, each in
// its lane (the event has a key), and returns the targets left: those
// queued as usual. Lanes are entered in target order, as every
// transaction that holds several lanes takes them, so that two never wait
// for each other.
func (db *DB) enqueueLanesTx(ctx context.Context, tx pgx.Tx, event int64, key, rank string, targets []string, now time.Time) ([]string, error) {
	if key == "" || !db.order.Any() {
		return targets, nil
	}
	var rest, ordered []string
	for _, t := range targets {
		if _, ok := db.order.Lane(t); ok {
			ordered = append(ordered, t)
		} else {
			rest = append(rest, t)
		}
	}
	slices.Sort(ordered)
	lt := &laneTx{ctx: ctx, tx: tx}
	for _, t := range ordered {
		l, _ := db.order.Lane(t)
		// A new row, which no other transaction can hold, then the lane's
		// lock, before any other delivery of the lane.
		var id int64
		if err := tx.QueryRow(ctx, enqueueLaneSQL, event, t, ms(queue.HeadAt(l, now)), ms(now), key, rank).Scan(&id); err != nil {
			return nil, fmt.Errorf("enqueue %s: %w", t, err)
		}
		// The usual case first: a new or empty lane, which it leads.
		tag, err := tx.Exec(ctx, leadLaneSQL, t, key, id, ms(now), l.Mode.SkipsStale(), rank)
		if err != nil {
			return nil, fmt.Errorf("enqueue %s in lane %s: %w", t, key, err)
		}
		if tag.RowsAffected() == 1 {
			continue
		}
		if err := lt.Park(id); err != nil {
			return nil, fmt.Errorf("enqueue %s: %w", t, err)
		}
		if _, err := queue.EnterLane(lt, l, t, key, id, now); err != nil {
			return nil, fmt.Errorf("enqueue %s in lane %s: %w", t, key, err)
		}
	}
	return rest, nil
}

// lockLanesTx locks, in (target, key) order, the lanes of the deliveries
// where selects (with args), before any of them changes.
func lockLanesTx(ctx context.Context, tx pgx.Tx, where string, args ...any) error {
	_, err := tx.Exec(ctx, `SELECT 1 FROM lanes WHERE (target, key) IN (SELECT target, lane FROM deliveries WHERE lane IS NOT NULL AND `+where+`)
		ORDER BY target, key FOR UPDATE`, args...)
	if err != nil {
		return fmt.Errorf("lock lanes: %w", err)
	}
	return nil
}

// enterLanesTx places deliveries that were just queued again (a replay, a
// redelivery of a dead event) in their lanes, forced (a replay: never
// skipped) or not. Those of targets no longer ordered are left as they
// are, due.
func (db *DB) enterLanesTx(ctx context.Context, tx pgx.Tx, where string, args []any, forced bool, now time.Time) error {
	rows, err := tx.Query(ctx, `SELECT id, target, lane FROM deliveries WHERE lane IS NOT NULL AND `+where+` ORDER BY target, lane, id`, args...)
	if err != nil {
		return fmt.Errorf("lanes of queued deliveries: %w", err)
	}
	type entry struct {
		id          int64
		target, key string
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (entry, error) {
		var e entry
		err := row.Scan(&e.id, &e.target, &e.key)
		return e, err
	})
	if err != nil {
		return fmt.Errorf("lanes of queued deliveries: %w", err)
	}
	lt := &laneTx{ctx: ctx, tx: tx}
	for _, e := range list {
		l, ok := db.order.Lane(e.target)
		if !ok {
			continue
		}
		if _, err := lt.LockLane(e.target, e.key); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE deliveries SET run_at = `+parkedSQL+`, forced = $1 WHERE id = $2`, forced, e.id); err != nil {
			return err
		}
		if _, err := queue.EnterLane(lt, l, e.target, e.key, e.id, now); err != nil {
			return fmt.Errorf("lane %s/%s: %w", e.target, e.key, err)
		}
	}
	return nil
}

// ReleaseLanes makes due the deliveries waiting in the lanes of targets
// that are not ordered now (SetOrder: a target whose order was set to
// none, or that the config no longer names), which would otherwise wait
// for good, and empties those lanes. It returns how many it released.
func (db *DB) ReleaseLanes(ctx context.Context, now time.Time) (int64, error) {
	ordered := db.order.Names()
	var n int64
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM lanes WHERE head IS NOT NULL AND target <> ALL ($1::text[]) ORDER BY target, key FOR UPDATE`, ordered); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE deliveries SET run_at = $1 WHERE run_at = `+parkedSQL+` AND target <> ALL ($2::text[])`, ms(now), ordered)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, `UPDATE lanes SET head = NULL, blocked_since = NULL, held_since = NULL WHERE head IS NOT NULL AND target <> ALL ($1::text[])`, ordered)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("release lanes: %w", err)
	}
	return n, nil
}

// Lanes lists lanes by target and key, as f selects them: each with its
// head, how many wait behind it, the version delivered last and, while
// its head is retrying (or its target paused), since when.
func (db *DB) Lanes(ctx context.Context, f queue.LaneFilter) ([]queue.Lane, error) {
	var a args
	q := `SELECT l.target, l.key, coalesce(l.head, 0), coalesce(h.event, 0), coalesce(h.status, ''), l.last_version, l.last_event,
		CASE WHEN h.status = 'retrying' THEN l.blocked_since
			WHEN h.status = 'paused' THEN (SELECT paused_at FROM paused_targets p WHERE p.target = l.target) END,
		CASE WHEN l.head IS NULL THEN 0 ELSE (SELECT count(*) FROM deliveries w WHERE w.target = l.target AND w.lane = l.key
			AND w.run_at = ` + parkedSQL + ` AND w.status IN ('pending', 'retrying', 'paused')) END
		FROM lanes l LEFT JOIN deliveries h ON h.id = l.head WHERE (l.target, l.key) > (` + a.add(f.After[0]) + `, ` + a.add(f.After[1]) + `)`
	if f.Target != "" {
		q += ` AND l.target = ` + a.add(f.Target)
	}
	if f.Blocked {
		q += ` AND ((l.blocked_since IS NOT NULL AND h.status = 'retrying') OR h.status = 'paused')`
	}
	q += ` ORDER BY l.target, l.key`
	if f.Limit > 0 {
		q += ` LIMIT ` + a.add(f.Limit)
	}
	rows, err := db.pool.Query(ctx, q, a...)
	if err != nil {
		return nil, fmt.Errorf("list lanes: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (queue.Lane, error) {
		var l queue.Lane
		var blocked *int64
		err := row.Scan(&l.Target, &l.Key, &l.Head, &l.HeadEvent, &l.HeadStatus, &l.LastVersion, &l.LastEvent, &blocked, &l.Queued)
		l.BlockedSince = fromNullMS(blocked)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("list lanes: %w", err)
	}
	return out, nil
}

// LanePosition is a queued delivery's place in its lane: 1 for the head,
// 2 for the next to run, …; 0 for a delivery in no lane, or finished.
func (db *DB) LanePosition(ctx context.Context, delivery int64) (int64, error) {
	var n int64
	err := db.pool.QueryRow(ctx, `SELECT CASE WHEN d.status NOT IN ('pending', 'retrying', 'running') THEN 0
		WHEN d.run_at <> `+parkedSQL+` THEN 1 ELSE 2 + (SELECT count(*) FROM deliveries w
		WHERE w.target = d.target AND w.lane = d.lane AND w.run_at = `+parkedSQL+` AND w.status IN ('pending', 'retrying', 'paused')
		AND (w.rank, w.id) < (d.rank, d.id)) END
		FROM deliveries d WHERE d.id = $1 AND d.lane IS NOT NULL`, delivery).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("lane position of delivery %d: %w", delivery, err)
	}
	return n, nil
}

// LaneStats counts the blocked lanes (head retrying), the oldest blocked
// head's failing time, and the skipped deliveries by reason kind.
func (db *DB) LaneStats(ctx context.Context) (queue.LaneStats, error) {
	s := queue.LaneStats{Skipped: map[string]int64{queue.ReasonStale: 0, queue.ReasonSuperseded: 0}}
	var oldest *int64
	err := db.pool.QueryRow(ctx, `SELECT count(*), min(l.blocked_since) FROM lanes l
		JOIN deliveries h ON h.id = l.head WHERE l.blocked_since IS NOT NULL AND h.status = 'retrying'`).Scan(&s.Blocked, &oldest)
	if err != nil {
		return s, fmt.Errorf("lane stats: %w", err)
	}
	s.OldestBlocked = fromNullMS(oldest)
	// And the lanes held by a pause of their target, blocked since it.
	var paused int64
	var pausedAt *int64
	err = db.pool.QueryRow(ctx, `SELECT count(*), min(p.paused_at) FROM deliveries h
		JOIN lanes l ON l.target = h.target AND l.key = h.lane AND l.head = h.id JOIN paused_targets p ON p.target = h.target
		WHERE h.status = 'paused'`).Scan(&paused, &pausedAt)
	if err != nil {
		return s, fmt.Errorf("lane stats: %w", err)
	}
	s.Blocked += paused
	if t := fromNullMS(pausedAt); !t.IsZero() && (s.OldestBlocked.IsZero() || t.Before(s.OldestBlocked)) {
		s.OldestBlocked = t
	}
	rows, err := db.pool.Query(ctx, `SELECT split_part(split_part(skip_reason, ':', 1), ' ', 1), count(*) FROM deliveries
		WHERE status = 'skipped' GROUP BY 1`)
	if err != nil {
		return s, fmt.Errorf("lane stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var kind string
		var n int64
		if err := rows.Scan(&kind, &n); err != nil {
			return s, fmt.Errorf("lane stats: %w", err)
		}
		s.Skipped[kind] += n
	}
	return s, rows.Err()
}
