package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"hookbox/order"
	"hookbox/queue"
)

// The lanes table: one row per (target, order key) of an ordered target,
// holding its head (the one delivery of the lane that may be due), the
// version delivered last and since when the head has been failing. The
// lane logic is queue's (EnterLane, AdvanceLane); laneTx gives it its
// steps in the writer's transaction, which is the only writer of the
// store, so every step of a lane is serial.

// parked is the run_at of a delivery waiting behind its lane's head: past
// any claim's "run_at <= now", and the deliveries_lane index's condition
// (migration 0007), word for word.
const parked = int64(1) << 62

const parkedSQL = `4611686018427387904`

// SetOrder tells the store how each ordered target orders its deliveries
// (the others, absent, are not ordered): a delivery to one of them is
// queued in its event's lane. Call it before the store takes events.
func (db *DB) SetOrder(lanes map[string]order.Lane) { db.order.Set(lanes) }

const (
	enqueueLaneSQL = `INSERT INTO deliveries (event, target, status, run_at, created_at, lane, rank) VALUES (?, ?, 'pending', ?, ?, ?, ?)`
	// leadLaneSQL makes a new delivery its lane's head in one statement
	// where the lane is new, or empty and the delivery not stale (the
	// stale test applies when the fifth value is 1); it changes no row
	// otherwise.
	leadLaneSQL = `INSERT INTO lanes (target, key, head, held_since) VALUES (?, ?, ?, ?)
		ON CONFLICT (target, key) DO UPDATE SET head = excluded.head, held_since = excluded.held_since, blocked_since = NULL
		WHERE lanes.head IS NULL AND (? = 0 OR ? = '' OR lanes.last_rank = '' OR ? > lanes.last_rank)`
	lockLaneSQL = `INSERT INTO lanes (target, key) VALUES (?, ?) ON CONFLICT (target, key) DO NOTHING`
	readLaneSQL = `SELECT coalesce(head, 0), last_rank, last_version, last_event, blocked_since, held_since FROM lanes WHERE target = ? AND key = ?`
	saveLaneSQL = `UPDATE lanes SET head = nullif(?, 0), last_rank = ?, last_version = ?, last_event = ?, blocked_since = ?, held_since = ? WHERE target = ? AND key = ?`
	laneItemSQL = `SELECT d.event, d.rank, coalesce(e.order_version, ''), d.forced, d.status FROM deliveries d JOIN events e ON e.id = d.event WHERE d.id = ?`
	parkSQL     = `UPDATE deliveries SET run_at = ` + parkedSQL + ` WHERE id = ? AND (status = 'pending' OR status = 'retrying' OR status = 'paused')`
	unparkSQL   = `UPDATE deliveries SET run_at = ? WHERE id = ? AND (status = 'pending' OR status = 'retrying' OR status = 'paused')`
	skipSQL     = `UPDATE deliveries SET status = 'skipped', skip_reason = ?, done_at = ?, run_at = ?, forced = 0 WHERE id = ? AND (status = 'pending' OR status = 'retrying' OR status = 'paused')`
	// waitingSQL is the condition of a lane's waiting deliveries, through
	// deliveries_lane.
	waitingSQL   = `target = ? AND lane = ? AND run_at = ` + parkedSQL + ` AND (status = 'pending' OR status = 'retrying' OR status = 'paused')`
	skipStaleSQL = `UPDATE deliveries SET status = 'skipped', skip_reason = ?, done_at = ?, run_at = ?, forced = 0
		WHERE ` + waitingSQL + ` AND forced = 0 AND rank != '' AND rank <= ?`
	skipWaitingSQL = `UPDATE deliveries SET status = 'skipped', skip_reason = ?, done_at = ?, run_at = ?, forced = 0
		WHERE ` + waitingSQL + ` AND forced = 0 AND id != ?`
	// The next ones read the item with it, as laneItemSQL does but for
	// the version (only a completing delivery's is used): one statement
	// a promotion.
	nextSelect    = `SELECT d.id, d.event, d.rank, '', d.forced, d.status FROM deliveries d INDEXED BY deliveries_lane WHERE `
	nextSQL       = nextSelect + waitingSQL + ` ORDER BY rank, id LIMIT 1`
	nextForcedSQL = nextSelect + waitingSQL + ` AND forced = 1 ORDER BY rank, id LIMIT 1`
	nextNewestSQL = nextSelect + waitingSQL + ` ORDER BY rank DESC, id DESC LIMIT 1`
	// completeLaneSQL reads, for a completion, the lane of a running
	// delivery (made when it was queued) and the delivery's item.
	completeLaneSQL = `SELECT coalesce(l.head, 0), l.last_rank, l.last_version, l.last_event, l.blocked_since, l.held_since,
		d.event, d.rank, coalesce(e.order_version, ''), d.forced, d.status
		FROM deliveries d JOIN events e ON e.id = d.event JOIN lanes l ON l.target = d.target AND l.key = d.lane WHERE d.id = ?`
)

// A fifo head delivered or dead, the usual end of a lane's delivery,
// advances its lane (AdvanceLane and PromoteLane for these outcomes) in
// two statements, as statements rather than the rows they write are
// most of what the store's one writer spends on them: the first makes the
// lane's first waiting delivery its head where the delivery finished is
// the head, and records the version and event delivered last; the second
// makes the new head due (unparkHeadSQL) or claims it for the caller
// (claimHeadSQL).

// advanceFIFOSQL makes the first waiting delivery of lane (?1, ?2),
// found through deliveries_lane, the head of the lane whose head was ?9,
// held since ?3 (head and held_since NULL where none waits), and records
// the version ?5 (if ?4) and the event ?8 (if ?7) delivered last. It
// changes no row where the lane is gone or its head is another delivery
// (the target's order changed).
const advanceFIFOSQL = `UPDATE lanes SET (head, held_since) = (SELECT w.id, ?3 FROM deliveries w INDEXED BY deliveries_lane
			WHERE w.target = ?1 AND w.lane = ?2 AND w.run_at = ` + parkedSQL + `
			AND (w.status = 'pending' OR w.status = 'retrying' OR w.status = 'paused') ORDER BY w.rank, w.id LIMIT 1),
		blocked_since = NULL,
		last_rank = CASE WHEN ?4 THEN ?5 ELSE last_rank END,
		last_version = CASE WHEN ?4 THEN ?6 ELSE last_version END,
		last_event = CASE WHEN ?7 THEN ?8 ELSE last_event END
	WHERE target = ?1 AND key = ?2 AND head = ?9`

// laneHeadSQL is the head of lane (?1, ?2) while it is parked (the
// advance left it so), by the lanes row's key.
const laneHeadSQL = `id = (SELECT head FROM lanes WHERE target = ?1 AND key = ?2) AND run_at = ` + parkedSQL

// unparkHeadSQL makes it due at ?3 (a paused one stays paused).
const unparkHeadSQL = `UPDATE deliveries SET run_at = ?3 WHERE ` + laneHeadSQL + ` AND (status = 'pending' OR status = 'retrying' OR status = 'paused')`

// claimHeadSQL claims it, as claimOneSQL does, under a lease to ?3.
const claimHeadSQL = `UPDATE deliveries SET status = 'running', attempts = attempts + 1, run_at = ?3, lease_token = abs(random())
	WHERE ` + laneHeadSQL + ` AND (status = 'pending' OR status = 'retrying')
	RETURNING id, event, target, attempts, lease_token, lane`

// advanceFIFO records the outcome of j, the head of a fifo lane just
// delivered (done) or dead, with the version and event read with it when
// it was claimed (Job.LaneRank, Job.LaneVersion), and makes the lane's
// new head, if any, its next waiting delivery. ok is false if j was not
// its lane's head, and then nothing changed.
func (t *laneTx) advanceFIFO(j *queue.Job, done bool, now time.Time) (ok bool, err error) {
	ranked := done && j.LaneRank != ""
	r, err := t.exec(advanceFIFOSQL, j.Target, j.Lane, now.UnixMilli(), ranked, j.LaneRank, j.LaneVersion, done, j.Event, j.Delivery)
	if err != nil {
		return false, fmt.Errorf("advance lane %s/%s: %w", j.Target, j.Lane, err)
	}
	n, err := r.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("advance lane %s/%s: %w", j.Target, j.Lane, err)
	}
	return n == 1, nil
}

// claimHead claims the parked head of j's lane for lease, with its event,
// or returns nil if there is none, or it is paused.
func (t *laneTx) claimHead(j *queue.Job, lease time.Duration, now time.Time) (*queue.Job, error) {
	row, err := t.queryRow(claimHeadSQL, j.Target, j.Lane, now.Add(lease).UnixMilli())
	if err != nil {
		return nil, err
	}
	n := &queue.Job{}
	var lane sql.NullString
	err = row.Scan(&n.Delivery, &n.Event, &n.Target, &n.Attempt, &n.Token, &lane)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim the head of lane %s/%s: %w", j.Target, j.Lane, err)
	}
	n.Lane = lane.String
	if err := t.db.loadEvents(t.ctx, t.tx, []*queue.Job{n}); err != nil {
		return nil, err
	}
	return n, nil
}

// unparkHead makes the parked head of j's lane due now, and reports
// whether there was one.
func (t *laneTx) unparkHead(j *queue.Job, now time.Time) (bool, error) {
	r, err := t.exec(unparkHeadSQL, j.Target, j.Lane, now.UnixMilli())
	if err != nil {
		return false, fmt.Errorf("promote in lane %s/%s: %w", j.Target, j.Lane, err)
	}
	n, err := r.RowsAffected()
	return n == 1, err
}

// laneTx is queue.LaneTx on one of the writer's transactions.
type laneTx struct {
	db  *DB
	ctx context.Context
	tx  *sql.Tx
	// With hold, Unpark keeps its last delivery back (held, heldAt) for
	// the caller to claim instead, or to let go (flush): one write of the
	// row rather than two.
	hold   bool
	held   int64
	heldAt time.Time
}

func (db *DB) laneTx(ctx context.Context, tx *sql.Tx) *laneTx {
	return &laneTx{db: db, ctx: ctx, tx: tx}
}

func (t *laneTx) exec(query string, args ...any) (sql.Result, error) {
	st, err := t.db.w.stmt(t.ctx, t.tx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(t.ctx, args...)
}

func (t *laneTx) queryRow(query string, args ...any) (*sql.Row, error) {
	st, err := t.db.w.stmt(t.ctx, t.tx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryRowContext(t.ctx, args...), nil
}

func msOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

func timeOf(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMilli(v.Int64).UTC()
}

func (t *laneTx) LockLane(target, key string) (queue.LaneState, error) {
	if _, err := t.exec(lockLaneSQL, target, key); err != nil {
		return queue.LaneState{}, fmt.Errorf("lane %s/%s: %w", target, key, err)
	}
	row, err := t.queryRow(readLaneSQL, target, key)
	if err != nil {
		return queue.LaneState{}, err
	}
	var s queue.LaneState
	var blocked, held sql.NullInt64
	if err := row.Scan(&s.Head, &s.LastRank, &s.LastVersion, &s.LastEvent, &blocked, &held); err != nil {
		return queue.LaneState{}, fmt.Errorf("lane %s/%s: %w", target, key, err)
	}
	s.BlockedSince, s.HeldSince = timeOf(blocked), timeOf(held)
	return s, nil
}

func (t *laneTx) SaveLane(target, key string, s queue.LaneState) error {
	_, err := t.exec(saveLaneSQL, s.Head, s.LastRank, s.LastVersion, s.LastEvent, msOrNil(s.BlockedSince), msOrNil(s.HeldSince), target, key)
	if err != nil {
		return fmt.Errorf("save lane %s/%s: %w", target, key, err)
	}
	return nil
}

func (t *laneTx) Item(id int64) (queue.LaneItem, error) {
	row, err := t.queryRow(laneItemSQL, id)
	if err != nil {
		return queue.LaneItem{}, err
	}
	it := queue.LaneItem{ID: id}
	var status string
	err = row.Scan(&it.Event, &it.Rank, &it.Version, &it.Forced, &status)
	if errors.Is(err, sql.ErrNoRows) {
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
	_, err := t.exec(parkSQL, id)
	return err
}

func (t *laneTx) Unpark(id int64, at time.Time) error {
	if t.hold {
		if err := t.flush(); err != nil {
			return err
		}
		t.held, t.heldAt = id, at
		return nil
	}
	_, err := t.exec(unparkSQL, at.UnixMilli(), id)
	return err
}

// flush writes the unpark held back, if any.
func (t *laneTx) flush() error {
	if t.held == 0 {
		return nil
	}
	id := t.held
	t.held = 0
	_, err := t.exec(unparkSQL, t.heldAt.UnixMilli(), id)
	return err
}

func (t *laneTx) Skip(id int64, reason string, now time.Time) error {
	_, err := t.exec(skipSQL, reason, now.UnixMilli(), now.UnixMilli(), id)
	return err
}

func (t *laneTx) SkipStale(target, key, rank, reason string, now time.Time) (int64, error) {
	r, err := t.exec(skipStaleSQL, reason, now.UnixMilli(), now.UnixMilli(), target, key, rank)
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}

func (t *laneTx) SkipWaiting(target, key string, keep int64, reason string, now time.Time) (int64, error) {
	r, err := t.exec(skipWaitingSQL, reason, now.UnixMilli(), now.UnixMilli(), target, key, keep)
	if err != nil {
		return 0, err
	}
	return r.RowsAffected()
}

func (t *laneTx) Next(target, key string, forced, newest bool) (queue.LaneItem, bool, error) {
	query := nextSQL
	switch {
	case forced:
		query = nextForcedSQL
	case newest:
		query = nextNewestSQL
	}
	row, err := t.queryRow(query, target, key)
	if err != nil {
		return queue.LaneItem{}, false, err
	}
	var it queue.LaneItem
	var status string
	if err := row.Scan(&it.ID, &it.Event, &it.Rank, &it.Version, &it.Forced, &status); errors.Is(err, sql.ErrNoRows) {
		return queue.LaneItem{}, false, nil
	} else if err != nil {
		return queue.LaneItem{}, false, fmt.Errorf("next of lane %s/%s: %w", target, key, err)
	}
	it.Queued = true // waiting: pending, retrying or paused
	return it, true, nil
}

// completing reads the lane of job j and j's item, for its completion;
// ok is false if the lane is gone.
func (t *laneTx) completing(j *queue.Job) (s queue.LaneState, it queue.LaneItem, ok bool, err error) {
	row, err := t.queryRow(completeLaneSQL, j.Delivery)
	if err != nil {
		return s, it, false, err
	}
	var blocked, held sql.NullInt64
	var status string
	err = row.Scan(&s.Head, &s.LastRank, &s.LastVersion, &s.LastEvent, &blocked, &held, &it.Event, &it.Rank, &it.Version, &it.Forced, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return s, it, false, nil
	}
	if err != nil {
		return s, it, false, fmt.Errorf("lane of delivery %d: %w", j.Delivery, err)
	}
	s.BlockedSince, s.HeldSince = timeOf(blocked), timeOf(held)
	it.ID = j.Delivery
	it.Running = status == queue.Running
	it.Queued = it.Running || status == queue.Pending || status == queue.Retrying || status == queue.Paused
	return s, it, true, nil
}

// enqueueLanesTx queues event's deliveries to the ordered targets, each in
// its lane (the event has a key), and returns the targets left: those
// queued as usual.
func (db *DB) enqueueLanesTx(ctx context.Context, tx *sql.Tx, event int64, key, rank string, targets []string, now time.Time) ([]string, error) {
	if key == "" || !db.order.Any() {
		return targets, nil
	}
	var rest []string
	var lt *laneTx
	for _, t := range targets {
		l, ok := db.order.Lane(t)
		if !ok {
			rest = append(rest, t)
			continue
		}
		if lt == nil {
			lt = db.laneTx(ctx, tx)
		}
		r, err := lt.exec(enqueueLaneSQL, event, t, queue.HeadAt(l, now).UnixMilli(), now.UnixMilli(), key, rank)
		if err != nil {
			return nil, fmt.Errorf("enqueue %s: %w", t, err)
		}
		id, err := r.LastInsertId()
		if err != nil {
			return nil, fmt.Errorf("enqueue %s: %w", t, err)
		}
		// The usual case first: a new or empty lane, which it leads.
		r, err = lt.exec(leadLaneSQL, t, key, id, now.UnixMilli(), l.Mode.SkipsStale(), rank, rank)
		if err != nil {
			return nil, fmt.Errorf("enqueue %s in lane %s: %w", t, key, err)
		}
		if n, err := r.RowsAffected(); err != nil {
			return nil, fmt.Errorf("enqueue %s in lane %s: %w", t, key, err)
		} else if n == 1 {
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

// enterLanesTx places deliveries that were just queued again (a replay, a
// redelivery of a dead event) in their lanes, forced (a replay: never
// skipped) or not. Those of targets no longer ordered are left as they
// are, due.
func (db *DB) enterLanesTx(ctx context.Context, tx *sql.Tx, where string, args []any, forced bool, now time.Time) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, target, lane FROM deliveries WHERE lane IS NOT NULL AND `+where+` ORDER BY id`, args...)
	if err != nil {
		return fmt.Errorf("lanes of queued deliveries: %w", err)
	}
	type entry struct {
		id          int64
		target, key string
	}
	var list []entry
	for rows.Next() {
		var e entry
		if err := rows.Scan(&e.id, &e.target, &e.key); err != nil {
			rows.Close()
			return fmt.Errorf("lanes of queued deliveries: %w", err)
		}
		list = append(list, e)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("lanes of queued deliveries: %w", err)
	}
	lt := db.laneTx(ctx, tx)
	for _, e := range list {
		l, ok := db.order.Lane(e.target)
		if !ok {
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET run_at = `+parkedSQL+`, forced = ? WHERE id = ?`, forced, e.id); err != nil {
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
	list := `(SELECT value FROM json_each(?))`
	names, err := json.Marshal(ordered)
	if err != nil {
		return 0, err
	}
	if ordered == nil {
		names = []byte("[]")
	}
	var n int64
	err = db.w.write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see writer.write
		r, err := tx.ExecContext(ctx, `UPDATE deliveries SET run_at = ? WHERE run_at = `+parkedSQL+` AND target NOT IN `+list, now.UnixMilli(), string(names))
		if err != nil {
			return err
		}
		if n, err = r.RowsAffected(); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE lanes SET head = NULL, blocked_since = NULL, held_since = NULL WHERE head IS NOT NULL AND target NOT IN `+list, string(names))
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
	q := `SELECT l.target, l.key, coalesce(l.head, 0), coalesce(h.event, 0), coalesce(h.status, ''), l.last_version, l.last_event,
		CASE WHEN h.status = 'retrying' THEN l.blocked_since
			WHEN h.status = 'paused' THEN (SELECT paused_at FROM paused_targets p WHERE p.target = l.target) END,
		CASE WHEN l.head IS NULL THEN 0 ELSE (SELECT count(*) FROM deliveries w INDEXED BY deliveries_lane WHERE w.target = l.target AND w.lane = l.key
			AND w.run_at = ` + parkedSQL + ` AND (w.status = 'pending' OR w.status = 'retrying' OR w.status = 'paused')) END
		FROM lanes l LEFT JOIN deliveries h ON h.id = l.head WHERE (l.target, l.key) > (?, ?)`
	args := []any{f.After[0], f.After[1]}
	if f.Target != "" {
		q += ` AND l.target = ?`
		args = append(args, f.Target)
	}
	if f.Blocked {
		q += ` AND ((l.blocked_since IS NOT NULL AND h.status = 'retrying') OR h.status = 'paused')`
	}
	q += ` ORDER BY l.target, l.key`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	rows, err := db.reader.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list lanes: %w", err)
	}
	defer rows.Close()
	var out []queue.Lane
	for rows.Next() {
		var l queue.Lane
		var blocked sql.NullInt64
		if err := rows.Scan(&l.Target, &l.Key, &l.Head, &l.HeadEvent, &l.HeadStatus, &l.LastVersion, &l.LastEvent, &blocked, &l.Queued); err != nil {
			return nil, fmt.Errorf("list lanes: %w", err)
		}
		l.BlockedSince = timeOf(blocked)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list lanes: %w", err)
	}
	return out, nil
}

// LanePosition is a queued delivery's place in its lane: 1 for the head,
// 2 for the next to run, …; 0 for a delivery in no lane, or finished.
func (db *DB) LanePosition(ctx context.Context, delivery int64) (int64, error) {
	var n int64
	err := db.reader.QueryRowContext(ctx, `SELECT CASE WHEN NOT (d.status = 'pending' OR d.status = 'retrying' OR d.status = 'running') THEN 0
		WHEN d.run_at != `+parkedSQL+` THEN 1 ELSE 2 + (SELECT count(*) FROM deliveries w INDEXED BY deliveries_lane
		WHERE w.target = d.target AND w.lane = d.lane AND w.run_at = `+parkedSQL+` AND (w.status = 'pending' OR w.status = 'retrying')
		AND (w.rank < d.rank OR (w.rank = d.rank AND w.id < d.id))) END
		FROM deliveries d WHERE d.id = ? AND d.lane IS NOT NULL`, delivery).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("lane position of delivery %d: %w", delivery, err)
	}
	return n, nil
}

// LaneStats counts the blocked lanes (head retrying, or its target
// paused), the oldest blocked head's failing (or pausing) time, and the skipped deliveries by reason kind.
func (db *DB) LaneStats(ctx context.Context) (queue.LaneStats, error) {
	s := queue.LaneStats{Skipped: map[string]int64{queue.ReasonStale: 0, queue.ReasonSuperseded: 0}}
	var oldest sql.NullInt64
	err := db.reader.QueryRowContext(ctx, `SELECT count(*), min(l.blocked_since) FROM lanes l INDEXED BY lanes_blocked
		JOIN deliveries h ON h.id = l.head WHERE l.blocked_since IS NOT NULL AND h.status = 'retrying'`).Scan(&s.Blocked, &oldest)
	if err != nil {
		return s, fmt.Errorf("lane stats: %w", err)
	}
	s.OldestBlocked = timeOf(oldest)
	// And the lanes held by a pause of their target, blocked since it.
	var paused int64
	var pausedAt sql.NullInt64
	err = db.reader.QueryRowContext(ctx, `SELECT count(*), min(p.paused_at) FROM deliveries h INDEXED BY deliveries_paused
		JOIN lanes l ON l.target = h.target AND l.key = h.lane AND l.head = h.id JOIN paused_targets p ON p.target = h.target
		WHERE h.status = 'paused'`).Scan(&paused, &pausedAt)
	if err != nil {
		return s, fmt.Errorf("lane stats: %w", err)
	}
	s.Blocked += paused
	if t := timeOf(pausedAt); !t.IsZero() && (s.OldestBlocked.IsZero() || t.Before(s.OldestBlocked)) {
		s.OldestBlocked = t
	}
	for kind := range s.Skipped {
		var n int64
		if err := db.reader.QueryRowContext(ctx, `SELECT count(*) FROM deliveries INDEXED BY deliveries_skipped
			WHERE status = 'skipped' AND skip_reason >= ? AND skip_reason < ?`, kind, kind+"\xff").Scan(&n); err != nil {
			return s, fmt.Errorf("lane stats: %w", err)
		}
		s.Skipped[kind] = n
	}
	return s, nil
}
