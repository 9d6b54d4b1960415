package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"hookbox/order"
	"hookbox/queue"
)

// The deliveries table is the queue: one row per (event, target), claimed
// by workers under a lease, retried with backoff, and dead at the attempt
// limit. A claim sets a fresh lease token; a completion or a renewal is
// written only where the token still matches, so a worker whose lease
// expired and was taken over cannot overwrite the newer attempt (fencing).

// dueCondition is the deliveries_due index's partial condition (migrations
// 0001 and 0002), word for word: a query naming the index with INDEXED BY
// must repeat it, or SQLite fails it with "no query solution". The index
// holds the queued deliveries: pending, retrying and running.
const dueCondition = `(status = 'pending' OR status = 'retrying' OR status = 'running')`

const (
	enqueueSQL = `INSERT INTO deliveries (event, target, status, run_at, created_at) VALUES (?, ?, 'pending', ?, ?)`
	// The subquery walks the deliveries_due index in claim order and stops
	// at the limit; the outer UPDATE touches only those rows. Without
	// INDEXED BY the planner prefers the status index and sorts the whole
	// backlog for every claim. "LIMIT ? + 0", not "LIMIT ?": SQLite reads a
	// bare bound LIMIT while planning and recompiles the statement whenever
	// its value changes, as the claim's size does from one claim to the next.
	claimSQL = `UPDATE deliveries SET status = 'running', attempts = attempts + 1, run_at = ?, lease_token = abs(random())
		WHERE id IN (SELECT id FROM deliveries INDEXED BY deliveries_due WHERE ` + dueCondition + ` AND run_at <= ?
			AND id NOT IN (SELECT value FROM json_each(?)) ORDER BY run_at, id LIMIT ? + 0)
		RETURNING id, event, target, attempts, lease_token, lane`
	loadEventsSQL = `SELECT id, source, event_id, type, received_at, content_type, body, swept_at IS NOT NULL FROM events
		WHERE id IN (SELECT value FROM json_each(?))`
	// loadLaneEventsSQL is loadEventsSQL with the events' versions, for
	// jobs of lanes (Job.LaneRank, Job.LaneVersion): a delivery's rank is
	// its event's.
	loadLaneEventsSQL = `SELECT id, source, event_id, type, received_at, content_type, body, swept_at IS NOT NULL,
		coalesce(order_rank, ''), coalesce(order_version, '') FROM events WHERE id IN (SELECT value FROM json_each(?))`
	renewSQL   = `UPDATE deliveries SET run_at = ? WHERE id = ? AND lease_token = ? AND status = 'running'`
	doneSQL    = `UPDATE deliveries SET status = 'done', done_at = ?, last_error = '' WHERE id = ? AND lease_token = ? AND status = 'running'`
	releaseSQL = `UPDATE deliveries SET status = 'retrying', run_at = ?, attempts = max(attempts - 1, 0), last_error = ?
		WHERE id = ? AND lease_token = ? AND status = 'running'`
	deadSQL  = `UPDATE deliveries SET status = 'dead', done_at = ?, last_error = ?, dead_reason = ? WHERE id = ? AND lease_token = ? AND status = 'running'`
	retrySQL = `UPDATE deliveries SET status = 'retrying', run_at = ?, last_error = ? WHERE id = ? AND lease_token = ? AND status = 'running'`
	// reviveSQL queues dead deliveries again, attempts reset, as a new
	// delivery: a redelivery of their event, or a replay.
	reviveSQL = `UPDATE deliveries SET status = 'pending', attempts = 0, run_at = ?, last_error = '', dead_reason = '', done_at = NULL`
)

// unclaimSQL returns a claimed job that never started to the queue, due at
// the time given, its claim not counted.
const unclaimSQL = `UPDATE deliveries SET status = CASE WHEN attempts <= 1 THEN 'pending' ELSE 'retrying' END,
	attempts = max(attempts - 1, 0), run_at = ? WHERE id = ? AND lease_token = ? AND status = 'running'`

// enqueueTx adds one pending delivery per target for event, inside tx:
// those to ordered targets in the lane of the event's key.
func (db *DB) enqueueTx(ctx context.Context, tx *sql.Tx, event int64, key, rank string, targets []string, now time.Time) error {
	targets, err := db.enqueueLanesTx(ctx, tx, event, key, rank, targets, now)
	if err != nil {
		return err
	}
	if len(targets) == 0 {
		return nil
	}
	st, err := db.w.stmt(ctx, tx, enqueueSQL)
	if err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	for _, t := range targets {
		if _, err := st.ExecContext(ctx, event, t, now.UnixMilli(), now.UnixMilli()); err != nil {
			return fmt.Errorf("enqueue %s: %w", t, err)
		}
	}
	return nil
}

// reviveTx puts event's dead deliveries back to pending with their attempts
// reset (the sender asks again), and marks their dead letters revived.
// Done and queued deliveries are untouched. It returns how many it revived.
func (db *DB) reviveTx(ctx context.Context, tx *sql.Tx, event int64, now time.Time) (int64, error) {
	r, err := tx.ExecContext(ctx, reviveSQL+` WHERE event = ? AND status = 'dead'`, now.UnixMilli(), event)
	if err != nil {
		return 0, fmt.Errorf("revive deliveries: %w", err)
	}
	n, err := r.RowsAffected()
	if err != nil || n == 0 {
		return n, err
	}
	if _, err := tx.ExecContext(ctx, reviveLettersSQL+` WHERE event = ? AND revived_at IS NULL`, now.UnixMilli(), event); err != nil {
		return 0, fmt.Errorf("revive dead letters: %w", err)
	}
	// Back in their lanes, behind the heads: the sender asks again, under
	// the lane's rules (a stale one is skipped).
	if err := db.enterLanesTx(ctx, tx, `event = ? AND status = 'pending' AND attempts = 0 AND run_at = ?`, []any{event, now.UnixMilli()}, false, now); err != nil {
		return 0, err
	}
	return n, nil
}

// Claim leases up to n due deliveries for lease and returns them with their
// events, leaving out the deliveries in skip: those the caller is still
// running, whose lease may have passed while they run, so that the same
// pair never runs twice at once. A running delivery whose lease has passed
// is due again.
func (db *DB) Claim(ctx context.Context, n int, lease time.Duration, now time.Time, skip []int64) ([]*queue.Job, error) {
	var jobs []*queue.Job
	skipJSON := idList(skip)
	wctx := context.WithoutCancel(ctx) // see IngestEvent: no watcher goroutine per statement
	err := db.w.write(ctx, func(tx *sql.Tx) error {
		ctx := wctx
		jobs = jobs[:0]
		claim, err := db.w.stmt(ctx, tx, claimSQL)
		if err != nil {
			return err
		}
		rows, err := claim.QueryContext(ctx, now.Add(lease).UnixMilli(), now.UnixMilli(), skipJSON, n)
		if err != nil {
			return err
		}
		for rows.Next() {
			j := &queue.Job{}
			var lane sql.NullString
			if err := rows.Scan(&j.Delivery, &j.Event, &j.Target, &j.Attempt, &j.Token, &lane); err != nil {
				rows.Close()
				return err
			}
			j.Lane = lane.String
			jobs = append(jobs, j)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		return db.loadEvents(ctx, tx, jobs)
	})
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	return jobs, nil
}

// idList is ids as a JSON array for json_each: "[]", never "null", for
// none (NOT IN a NULL would leave nothing).
func idList(ids []int64) string {
	b := make([]byte, 0, 2+len(ids)*8)
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, ']'))
}

// loadEvents fills in the events of jobs with one query.
func (db *DB) loadEvents(ctx context.Context, tx *sql.Tx, jobs []*queue.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	byEvent := make(map[int64][]*queue.Job, len(jobs))
	ids := make([]int64, 0, len(jobs))
	query, lanes := loadEventsSQL, false
	for _, j := range jobs {
		if _, ok := byEvent[j.Event]; !ok {
			ids = append(ids, j.Event)
		}
		byEvent[j.Event] = append(byEvent[j.Event], j)
		lanes = lanes || j.Lane != ""
	}
	if lanes {
		query = loadLaneEventsSQL
	}
	list := idList(ids)
	load, err := db.w.stmt(ctx, tx, query)
	if err != nil {
		return err
	}
	rows, err := load.QueryContext(ctx, list)
	if err != nil {
		return fmt.Errorf("load events: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var e queue.Job
		var recv int64
		var body []byte
		var swept bool
		dest := []any{&e.Event, &e.Source, &e.EventID, &e.Type, &recv, &e.ContentType, &body, &swept}
		if lanes {
			dest = append(dest, &e.LaneRank, &e.LaneVersion)
		}
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("load events: %w", err)
		}
		for _, j := range byEvent[e.Event] {
			j.Source, j.EventID, j.Type, j.ContentType = e.Source, e.EventID, e.Type, e.ContentType
			if j.Lane != "" {
				j.LaneRank, j.LaneVersion = e.LaneRank, e.LaneVersion
			}
			j.ReceivedAt = time.UnixMilli(recv).UTC()
			// Not body == nil: an empty body reads back as nil too.
			j.Body, j.Swept = body, swept
		}
		delete(byEvent, e.Event)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load events: %w", err)
	}
	for id, js := range byEvent {
		return fmt.Errorf("load events: delivery %d refers to event %d, which is not in the store (was the file edited by hand? `sqlite3 STORE 'PRAGMA foreign_key_check'` lists such rows)", js[0].Delivery, id)
	}
	return nil
}

// Unclaim puts jobs that were claimed but never started back in the queue,
// as they were: their claim does not count as an attempt.
func (db *DB) Unclaim(ctx context.Context, jobs []*queue.Job, now time.Time) error {
	if len(jobs) == 0 {
		return nil
	}
	err := db.w.write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see writer.write
		for _, j := range jobs {
			if _, err := tx.ExecContext(ctx, unclaimSQL, now.UnixMilli(), j.Delivery, j.Token); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("unclaim deliveries: %w", err)
	}
	return nil
}

// Defer puts jobs that were claimed but never started back in the queue,
// each due at until[i]: their claim does not count as an attempt. The
// pool defers the jobs of a target out of tokens or slots to the time it
// expects their turn, so that they wait in the store and not in a worker.
func (db *DB) Defer(ctx context.Context, jobs []*queue.Job, until []time.Time) error {
	if len(jobs) == 0 {
		return nil
	}
	err := db.w.write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see writer.write
		for i, j := range jobs {
			if _, err := tx.ExecContext(ctx, unclaimSQL, until[i].UnixMilli(), j.Delivery, j.Token); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("defer deliveries: %w", err)
	}
	return nil
}

// NextDue returns when the earliest queued delivery other than those in
// except is due, or false if there is none. A pool leaves out the
// deliveries it holds: their leases may pass while they wait or run, but a
// claim would skip them, so they are no reason to wake.
func (db *DB) NextDue(ctx context.Context, except []int64) (time.Time, bool, error) {
	var at int64
	err := db.reader.QueryRowContext(ctx, `SELECT run_at FROM deliveries INDEXED BY deliveries_due
		WHERE `+dueCondition+` AND id NOT IN (SELECT value FROM json_each(?))
		ORDER BY run_at LIMIT 1`, idList(except)).Scan(&at)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next due: %w", err)
	}
	return time.UnixMilli(at), true, nil
}

// QueuedByTarget counts the queued (pending, retrying, running, paused)
// deliveries of each target, through the due index and the paused one:
// the queue, not the whole table.
func (db *DB) QueuedByTarget(ctx context.Context) (map[string]int64, error) {
	rows, err := db.reader.QueryContext(ctx, `SELECT target, sum(n) FROM (
		SELECT target, count(*) AS n FROM deliveries INDEXED BY deliveries_due WHERE `+dueCondition+` GROUP BY target
		UNION ALL SELECT target, count(*) FROM deliveries INDEXED BY deliveries_paused WHERE status = 'paused' GROUP BY target)
		GROUP BY target`)
	if err != nil {
		return nil, fmt.Errorf("queued deliveries by target: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var target string
		var n int64
		if err := rows.Scan(&target, &n); err != nil {
			return nil, fmt.Errorf("queued deliveries by target: %w", err)
		}
		out[target] = n
	}
	return out, rows.Err()
}

// Running lists the deliveries marked running. Before Recover, these are
// the ones a stopped process left behind.
func (db *DB) Running(ctx context.Context) ([]queue.RunningKey, error) {
	rows, err := db.reader.QueryContext(ctx, `SELECT e.source, e.event_id, d.target
		FROM deliveries d INDEXED BY deliveries_due JOIN events e ON e.id = d.event
		WHERE `+dueCondition+` AND d.status = 'running'`)
	if err != nil {
		return nil, fmt.Errorf("running deliveries: %w", err)
	}
	defer rows.Close()
	var out []queue.RunningKey
	for rows.Next() {
		var k queue.RunningKey
		if err := rows.Scan(&k.Source, &k.EventID, &k.Target); err != nil {
			return nil, fmt.Errorf("running deliveries: %w", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("running deliveries: %w", err)
	}
	return out, nil
}

// Recover makes every delivery left running by a stopped process due now.
// Run it at startup, when no worker of this store can be running.
func (db *DB) Recover(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := db.w.write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see writer.write
		r, err := tx.ExecContext(ctx, `UPDATE deliveries SET status = 'retrying', run_at = ?, last_error = 'interrupted: hookbox stopped during the attempt'
			WHERE status = 'running'`, now.UnixMilli())
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("recover running deliveries: %w", err)
	}
	return n, nil
}

// Renew sets the lease of each of jobs that is still running under its
// token to expire at now+lease, in one write, and returns how many it
// renewed. The others were taken over or have finished.
func (db *DB) Renew(ctx context.Context, jobs []*queue.Job, lease time.Duration, now time.Time) (int64, error) {
	var renewed int64
	err := db.w.write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see writer.write
		renewed = 0
		st, err := db.w.stmt(ctx, tx, renewSQL)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			r, err := st.ExecContext(ctx, now.Add(lease).UnixMilli(), j.Delivery, j.Token)
			if err != nil {
				return err
			}
			n, err := r.RowsAffected()
			if err != nil {
				return err
			}
			renewed += n
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("renew leases of %d deliveries: %w", len(jobs), err)
	}
	return renewed, nil
}

// Complete records the attempt and moves the delivery to done, retrying,
// dead (with its dead letter) or, released, back to the queue, only while
// the job's lease token still matches. It returns queue.ErrStale if the
// lease was taken over: then only the attempt log changed.
func (db *DB) Complete(ctx context.Context, j *queue.Job, f queue.Finish, now time.Time) error {
	var stale bool
	err := db.w.write(ctx, db.completeFn(ctx, j, f, now, &stale))
	db.completed(j, f, now, err, stale)
	return completeErr(j, err, stale)
}

// CompleteAsync is Complete without waiting for the commit: done gets
// Complete's error once the write is durable. done runs on the store's
// writer goroutine and must be quick. Workers use it so that they go on to
// the next job while many completions share one commit. An error returned
// (the store is closing) means done is not called.
func (db *DB) CompleteAsync(ctx context.Context, j *queue.Job, f queue.Finish, now time.Time, done func(error)) error {
	var stale bool
	err := db.w.writeAsync(ctx, db.completeFn(ctx, j, f, now, &stale), func(err error) {
		db.completed(j, f, now, err, stale)
		done(completeErr(j, err, stale))
	})
	if err != nil {
		return fmt.Errorf("complete delivery %d: %w", j.Delivery, err)
	}
	return nil
}

// completed keeps the target's last success (health.go) once a completion
// that made its delivery done is durable.
func (db *DB) completed(j *queue.Job, f queue.Finish, now time.Time, err error, stale bool) {
	if err == nil && !stale && f.Attempt.Outcome == "ok" {
		db.done.note(j.Target, now.UnixMilli())
	}
}

func completeErr(j *queue.Job, err error, stale bool) error {
	if err != nil {
		return fmt.Errorf("complete delivery %d: %w", j.Delivery, err)
	}
	if stale {
		return queue.ErrStale
	}
	return nil
}

func (db *DB) completeFn(ctx context.Context, j *queue.Job, f queue.Finish, now time.Time, stale *bool) func(*sql.Tx) error {
	return func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see writer.write
		*stale = false
		a := f.Attempt
		query, args := retrySQL, []any{f.Next.UnixMilli(), a.Error, j.Delivery, j.Token}
		switch {
		case a.Outcome == "ok":
			query, args = doneSQL, []any{now.UnixMilli(), j.Delivery, j.Token}
		case f.Release:
			query, args = releaseSQL, []any{now.UnixMilli(), a.Error, j.Delivery, j.Token}
		case f.Dead:
			query, args = deadSQL, []any{now.UnixMilli(), a.Error, f.Reason, j.Delivery, j.Token}
		}
		j.Promoted, j.Next = false, nil
		var lane *laneTx
		var ls queue.LaneState
		var li queue.LaneItem
		// A fifo head delivered or dead, the usual end of a lane's
		// delivery, advances its lane in one statement (advanceFIFO) after
		// the delivery's own, with no read of the lane before.
		var fifo bool
		if j.Lane != "" {
			l, ok := db.order.Lane(j.Target)
			fifo = ok && l.Mode == order.FIFO && (a.Outcome == "ok" || (!f.Release && f.Dead))
		}
		if j.Lane != "" && !fifo {
			// The lane and the item, before the delivery changes.
			lane = db.laneTx(ctx, tx)
			lane.hold = f.Lease > 0
			var ok bool
			var err error
			if ls, li, ok, err = lane.completing(j); err != nil {
				return err
			} else if !ok {
				lane = nil
			}
		}
		st, err := db.w.stmt(ctx, tx, query)
		if err != nil {
			return err
		}
		r, err := st.ExecContext(ctx, args...)
		if err != nil {
			return err
		}
		n, err := r.RowsAffected()
		if err != nil {
			return err
		}
		if fifo && n == 1 {
			if err := db.advanceFIFOTx(ctx, tx, j, f, a.Outcome == "ok", now); err != nil {
				return err
			}
		}
		if lane != nil && n == 1 {
			if l, ok := db.order.Lane(j.Target); ok {
				next, err := queue.AdvanceLane(lane, l, j.Target, j.Lane, ls, li, f.LaneOutcome(), f.Next, now)
				if err != nil {
					return err
				}
				if next != 0 && f.Lease > 0 && lane.held == next && !lane.heldAt.After(now) {
					// Claimed for the caller straight from where it waited.
					if j.Next, err = db.claimOneTx(ctx, tx, next, f.Lease, now); err != nil {
						return err
					}
					if j.Next != nil {
						lane.held = 0
					}
				}
				if err := lane.flush(); err != nil {
					return err
				}
				j.Promoted = next != 0 && j.Next == nil
			}
		}
		outcome := a.Outcome
		if n == 0 {
			outcome = "stale"
		}
		var status, exit any
		if a.HTTPStatus != 0 {
			status = a.HTTPStatus
		}
		if a.ExitCode != nil {
			exit = *a.ExitCode
		}
		ins, err := db.w.stmt(ctx, tx, attemptSQL)
		if err != nil {
			return err
		}
		if _, err := ins.ExecContext(ctx, j.Delivery, a.Number, a.StartedAt.UnixMilli(), a.Duration.Microseconds(),
			outcome, status, exit, a.Error, a.Output); err != nil {
			return err
		}
		if n == 0 {
			*stale = true
			return nil
		}
		if f.Dead {
			var due any
			if f.AlertDue {
				due = now.UnixMilli()
			}
			if _, err := tx.ExecContext(ctx, deadLetterSQL, j.Delivery, j.Event, j.Target, j.Attempt, a.Error, now.UnixMilli(), due); err != nil {
				return err
			}
		}
		return nil
	}
}

// advanceFIFOTx advances the fifo lane of j, delivered (done) or dead,
// inside tx, and claims its next delivery for the caller (f.Lease) or
// makes it due.
func (db *DB) advanceFIFOTx(ctx context.Context, tx *sql.Tx, j *queue.Job, f queue.Finish, done bool, now time.Time) error {
	lt := db.laneTx(ctx, tx)
	ok, err := lt.advanceFIFO(j, done, now)
	if err != nil || !ok {
		return err
	}
	if f.Lease > 0 {
		// Claimed for the caller straight from where it waited.
		if j.Next, err = lt.claimHead(j, f.Lease, now); err != nil || j.Next != nil {
			return err
		}
	}
	j.Promoted, err = lt.unparkHead(j, now)
	return err
}

// Deliveries returns the deliveries of the given events, keyed by event.
func (db *DB) Deliveries(ctx context.Context, events []int64) (map[int64][]queue.Delivery, error) {
	out := make(map[int64][]queue.Delivery, len(events))
	for start := 0; start < len(events); start += 500 {
		chunk := events[start:min(start+500, len(events))]
		args := make([]any, len(chunk))
		for i, e := range chunk {
			args[i] = e
		}
		rows, err := db.reader.QueryContext(ctx, `SELECT id, event, target, status, attempts, last_error, dead_reason, run_at, created_at, done_at,
			coalesce(lane, ''), skip_reason FROM deliveries WHERE event IN (?`+strings.Repeat(",?", len(chunk)-1)+`) ORDER BY id`, args...)
		if err != nil {
			return nil, fmt.Errorf("list deliveries: %w", err)
		}
		for rows.Next() {
			var d queue.Delivery
			var runAt, created int64
			var done sql.NullInt64
			if err := rows.Scan(&d.ID, &d.Event, &d.Target, &d.Status, &d.Attempts, &d.LastError, &d.DeadReason, &runAt, &created, &done,
				&d.Lane, &d.SkipReason); err != nil {
				rows.Close()
				return nil, fmt.Errorf("list deliveries: %w", err)
			}
			d.Waiting = runAt == parked
			d.RunAt, d.CreatedAt = time.UnixMilli(runAt).UTC(), time.UnixMilli(created).UTC()
			if done.Valid {
				d.DoneAt = time.UnixMilli(done.Int64).UTC()
			}
			out[d.Event] = append(out[d.Event], d)
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("list deliveries: %w", err)
		}
	}
	return out, nil
}

// claimOneSQL claims one due delivery, as claimSQL does.
const claimOneSQL = `UPDATE deliveries SET status = 'running', attempts = attempts + 1, run_at = ?, lease_token = abs(random())
	WHERE id = ? AND (status = 'pending' OR status = 'retrying') AND (run_at <= ? OR run_at = ` + parkedSQL + `)
	RETURNING id, event, target, attempts, lease_token, lane`

// claimOneTx claims delivery id for lease inside tx, with its event, or
// returns nil if it is neither due nor parked (the lane logic made it its
// lane's head: the caller holds back its unpark).
func (db *DB) claimOneTx(ctx context.Context, tx *sql.Tx, id int64, lease time.Duration, now time.Time) (*queue.Job, error) {
	st, err := db.w.stmt(ctx, tx, claimOneSQL)
	if err != nil {
		return nil, err
	}
	j := &queue.Job{}
	var lane sql.NullString
	err = st.QueryRowContext(ctx, now.Add(lease).UnixMilli(), id, now.UnixMilli()).Scan(&j.Delivery, &j.Event, &j.Target, &j.Attempt, &j.Token, &lane)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim delivery %d: %w", id, err)
	}
	j.Lane = lane.String
	if err := db.loadEvents(ctx, tx, []*queue.Job{j}); err != nil {
		return nil, err
	}
	return j, nil
}
