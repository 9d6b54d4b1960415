package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"hookbox/order"
	"hookbox/queue"
)

// The deliveries table is the queue: one row per (event, target), claimed
// by workers under a lease, retried with backoff, and dead at the attempt
// limit. A claim locks the rows it takes with FOR UPDATE SKIP LOCKED, so
// concurrent claims (other workers, other replicas) pass over them rather
// than wait, and sets a fresh lease token from a sequence; a completion or
// a renewal is written only where the token still matches, so a worker
// whose lease expired and was taken over cannot overwrite the newer
// attempt (fencing).

// dueCondition is the deliveries_due index's partial condition: the queued
// deliveries, pending, retrying and running.
const dueCondition = `status IN ('pending', 'retrying', 'running')`

const (
	enqueueSQL = `INSERT INTO deliveries (event, target, status, run_at, created_at)
		SELECT $1, t, 'pending', $3, $3 FROM unnest($2::text[]) AS t`
	// The subquery walks deliveries_due in claim order, skips rows another
	// claim holds, and stops at the limit; the UPDATE takes only those.
	// Its due time comes back so that the jobs keep the claim's order.
	claimSQL = `UPDATE deliveries d SET status = 'running', attempts = d.attempts + 1, run_at = $1, lease_token = nextval('lease_tokens'), replica = $5
		FROM (SELECT id, run_at FROM deliveries WHERE ` + dueCondition + ` AND run_at <= $2 AND id <> ALL ($3::bigint[])
			ORDER BY run_at, id LIMIT $4 FOR UPDATE SKIP LOCKED) due
		WHERE d.id = due.id
		RETURNING d.id, d.event, d.target, d.attempts, d.lease_token, due.run_at, coalesce(d.lane, '')`
	loadEventsSQL = `SELECT id, source, event_id, type, received_at, content_type, body, swept_at IS NOT NULL FROM events
		WHERE id = ANY ($1::bigint[])`
	// loadLaneEventsSQL is loadEventsSQL with the events' versions, for
	// jobs of lanes (Job.LaneRank, Job.LaneVersion): a delivery's rank is
	// its event's.
	loadLaneEventsSQL = `SELECT id, source, event_id, type, received_at, content_type, body, swept_at IS NOT NULL,
		coalesce(order_rank, ''), coalesce(order_version, '') FROM events WHERE id = ANY ($1::bigint[])`
	renewSQL   = `UPDATE deliveries SET run_at = $1 WHERE id = $2 AND lease_token = $3 AND status = 'running'`
	doneSQL    = `UPDATE deliveries SET status = 'done', done_at = $1, last_error = '' WHERE id = $2 AND lease_token = $3 AND status = 'running'`
	releaseSQL = `UPDATE deliveries SET status = 'retrying', run_at = $1, attempts = greatest(attempts - 1, 0), last_error = $2
		WHERE id = $3 AND lease_token = $4 AND status = 'running'`
	deadSQL  = `UPDATE deliveries SET status = 'dead', done_at = $1, last_error = $2, dead_reason = $3 WHERE id = $4 AND lease_token = $5 AND status = 'running'`
	retrySQL = `UPDATE deliveries SET status = 'retrying', run_at = $1, last_error = $2 WHERE id = $3 AND lease_token = $4 AND status = 'running'`
	// reviveSet queues dead deliveries again, attempts reset, as a new
	// delivery: a redelivery of their event, or a replay. $1 is now.
	reviveSet = `UPDATE deliveries SET status = 'pending', attempts = 0, run_at = $1, last_error = '', dead_reason = '', done_at = NULL`
)

// unclaimSQL returns a claimed job that never started to the queue, due at
// the time given, its claim not counted.
const unclaimSQL = `UPDATE deliveries SET status = CASE WHEN attempts <= 1 THEN 'pending' ELSE 'retrying' END,
	attempts = greatest(attempts - 1, 0), run_at = $1 WHERE id = $2 AND lease_token = $3 AND status = 'running'`

// enqueueTx adds one pending delivery per target for event, inside tx:
// those to ordered targets in the lane of the event's key.
func (db *DB) enqueueTx(ctx context.Context, tx pgx.Tx, event int64, key, rank string, targets []string, now time.Time) error {
	targets, err := db.enqueueLanesTx(ctx, tx, event, key, rank, targets, now)
	if err != nil || len(targets) == 0 {
		return err
	}
	if _, err := tx.Exec(ctx, enqueueSQL, event, targets, ms(now)); err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	return nil
}

// reviveTx puts event's dead deliveries back to pending with their attempts
// reset (the sender asks again), and marks their dead letters revived.
// Done and queued deliveries are untouched. It returns how many it revived.
func (db *DB) reviveTx(ctx context.Context, tx pgx.Tx, event int64, now time.Time) (int64, error) {
	tag, err := tx.Exec(ctx, reviveSet+` WHERE event = $2 AND status = 'dead'`, ms(now), event)
	if err != nil {
		return 0, fmt.Errorf("revive deliveries: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return 0, nil
	}
	if _, err := tx.Exec(ctx, reviveLettersSet+` WHERE event = $2 AND revived_at IS NULL`, ms(now), event); err != nil {
		return 0, fmt.Errorf("revive dead letters: %w", err)
	}
	// Back in their lanes, behind the heads: the sender asks again, under
	// the lane's rules (a stale one is skipped).
	if err := db.enterLanesTx(ctx, tx, `event = $1 AND status = 'pending' AND attempts = 0 AND run_at = $2`, []any{event, ms(now)}, false, now); err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// Claim leases up to n due deliveries for lease and returns them with their
// events, in due order, leaving out the deliveries in skip: those the
// caller is still running, whose lease may have passed while they run, so
// that the same pair never runs twice at once. A running delivery whose
// lease has passed is due again.
func (db *DB) Claim(ctx context.Context, n int, lease time.Duration, now time.Time, skip []int64) ([]*queue.Job, error) {
	var jobs []*queue.Job
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		jobs = jobs[:0]
		rows, err := tx.Query(ctx, claimSQL, ms(now.Add(lease)), ms(now), ids(skip), n, db.replica.ID)
		if err != nil {
			return err
		}
		due := map[*queue.Job]int64{}
		for rows.Next() {
			j := &queue.Job{}
			var at int64
			if err := rows.Scan(&j.Delivery, &j.Event, &j.Target, &j.Attempt, &j.Token, &at, &j.Lane); err != nil {
				rows.Close()
				return err
			}
			due[j] = at
			jobs = append(jobs, j)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		sort.SliceStable(jobs, func(a, b int) bool {
			if due[jobs[a]] != due[jobs[b]] {
				return due[jobs[a]] < due[jobs[b]]
			}
			return jobs[a].Delivery < jobs[b].Delivery
		})
		return loadEvents(ctx, tx, jobs)
	})
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	return jobs, nil
}

// loadEvents fills in the events of jobs with one query.
func loadEvents(ctx context.Context, tx pgx.Tx, jobs []*queue.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	byEvent := make(map[int64][]*queue.Job, len(jobs))
	list := make([]int64, 0, len(jobs))
	query, lanes := loadEventsSQL, false
	for _, j := range jobs {
		if _, ok := byEvent[j.Event]; !ok {
			list = append(list, j.Event)
		}
		byEvent[j.Event] = append(byEvent[j.Event], j)
		lanes = lanes || j.Lane != ""
	}
	if lanes {
		query = loadLaneEventsSQL
	}
	rows, err := tx.Query(ctx, query, list)
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
			j.ReceivedAt = fromMS(recv)
			j.Body, j.Swept = body, swept
		}
		delete(byEvent, e.Event)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load events: %w", err)
	}
	for id, js := range byEvent {
		return fmt.Errorf("load events: delivery %d refers to event %d, which is not in the store", js[0].Delivery, id)
	}
	return nil
}

// Unclaim puts jobs that were claimed but never started back in the queue,
// as they were: their claim does not count as an attempt.
func (db *DB) Unclaim(ctx context.Context, jobs []*queue.Job, now time.Time) error {
	if len(jobs) == 0 {
		return nil
	}
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		for _, j := range jobs {
			if _, err := tx.Exec(ctx, unclaimSQL, ms(now), j.Delivery, j.Token); err != nil {
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
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		for i, j := range jobs {
			if _, err := tx.Exec(ctx, unclaimSQL, ms(until[i]), j.Delivery, j.Token); err != nil {
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
// except is due, or false if there is none.
func (db *DB) NextDue(ctx context.Context, except []int64) (time.Time, bool, error) {
	var at int64
	err := db.pool.QueryRow(ctx, `SELECT run_at FROM deliveries
		WHERE `+dueCondition+` AND id <> ALL ($1::bigint[]) ORDER BY run_at, id LIMIT 1`, ids(except)).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next due: %w", err)
	}
	return time.UnixMilli(at), true, nil
}

// QueuedByTarget counts the queued (pending, retrying, running, paused)
// deliveries of each target.
func (db *DB) QueuedByTarget(ctx context.Context) (map[string]int64, error) {
	rows, err := db.pool.Query(ctx, `SELECT target, sum(n)::bigint FROM (
		SELECT target, count(*) AS n FROM deliveries WHERE `+dueCondition+` GROUP BY target
		UNION ALL SELECT target, count(*) FROM deliveries WHERE status = 'paused' GROUP BY target) q GROUP BY target`)
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
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("queued deliveries by target: %w", err)
	}
	return out, nil
}

// Renew sets the lease of each of jobs that is still running under its
// token to expire at now+lease, in one write, and returns how many it
// renewed. The others were taken over or have finished.
func (db *DB) Renew(ctx context.Context, jobs []*queue.Job, lease time.Duration, now time.Time) (int64, error) {
	var renewed int64
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		renewed = 0
		for _, j := range jobs {
			tag, err := tx.Exec(ctx, renewSQL, ms(now.Add(lease)), j.Delivery, j.Token)
			if err != nil {
				return err
			}
			renewed += tag.RowsAffected()
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
	err := db.write(ctx, db.completeFn(j, f, now, &stale))
	return completeErr(j, err, stale)
}

// CompleteAsync is Complete without waiting: done gets Complete's error
// once the write is committed. An error returned (the store is closing)
// means done is not called. Close waits for the completions under way.
func (db *DB) CompleteAsync(ctx context.Context, j *queue.Job, f queue.Finish, now time.Time, done func(error)) error {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return fmt.Errorf("complete delivery %d: %w", j.Delivery, ErrClosed)
	}
	db.async.Add(1)
	go func() {
		defer db.async.Done()
		var stale bool
		err := db.writeLocked(ctx, db.completeFn(j, f, now, &stale))
		done(completeErr(j, err, stale))
	}()
	return nil
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

func (db *DB) completeFn(j *queue.Job, f queue.Finish, now time.Time, stale *bool) func(context.Context, pgx.Tx) error {
	return func(ctx context.Context, tx pgx.Tx) error {
		*stale = false
		a := f.Attempt
		query, args := retrySQL, []any{ms(f.Next), a.Error, j.Delivery, j.Token}
		switch {
		case a.Outcome == "ok":
			query, args = doneSQL, []any{ms(now), j.Delivery, j.Token}
		case f.Release:
			query, args = releaseSQL, []any{ms(now), a.Error, j.Delivery, j.Token}
		case f.Dead:
			query, args = deadSQL, []any{ms(now), a.Error, f.Reason, j.Delivery, j.Token}
		}
		j.Promoted, j.Next = false, nil
		var lane *laneTx
		var ls queue.LaneState
		var li queue.LaneItem
		// A fifo head delivered or dead, the usual end of a lane's
		// delivery, advances its lane in one statement (advanceFIFOTx)
		// after the delivery's own, with no read of it before.
		var fifo bool
		if j.Lane != "" {
			l, ok := db.order.Lane(j.Target)
			fifo = ok && l.Mode == order.FIFO && (a.Outcome == "ok" || (!f.Release && f.Dead))
			// The lane's lock first, as every transaction of a lane takes
			// it before any of the lane's deliveries.
			if !fifo {
				lane = &laneTx{ctx: ctx, tx: tx}
				var err error
				if ls, err = lane.LockLane(j.Target, j.Lane); err != nil {
					return err
				}
				if li, err = lane.Item(j.Delivery); err != nil {
					return err
				}
			}
		}
		var tag pgconn.CommandTag
		var err error
		if fifo {
			// Its lock alone (advanceFIFOSQL reads what it needs), sent
			// with the delivery's own statement in one round trip: the
			// server runs them in turn, the lock first.
			tag, err = lockAndExec(ctx, tx, j, query, args)
		} else {
			tag, err = tx.Exec(ctx, query, args...)
		}
		if err != nil {
			return err
		}
		n := tag.RowsAffected()
		if fifo && n == 1 {
			if j.Promoted, err = advanceFIFOTx(ctx, tx, j, a.Outcome == "ok", f.Lease, now); err != nil {
				return err
			}
		}
		if lane != nil && n == 1 {
			if l, ok := db.order.Lane(j.Target); ok {
				next, err := queue.AdvanceLane(lane, l, j.Target, j.Lane, ls, li, f.LaneOutcome(), f.Next, now)
				if err != nil {
					return err
				}
				if next != 0 && f.Lease > 0 {
					if j.Next, err = claimOneTx(ctx, tx, next, f.Lease, now); err != nil {
						return err
					}
				}
				j.Promoted = next != 0 && j.Next == nil
			}
		}
		outcome := a.Outcome
		if n == 0 {
			outcome = "stale"
		}
		var status, exit *int
		if a.HTTPStatus != 0 {
			status = &a.HTTPStatus
		}
		exit = a.ExitCode
		if _, err := tx.Exec(ctx, attemptSQL, j.Delivery, a.Number, ms(a.StartedAt), a.Duration.Microseconds(),
			outcome, status, exit, a.Error, a.Output); err != nil {
			return err
		}
		if n == 0 {
			*stale = true
			return nil
		}
		if f.Dead {
			var due *int64
			if f.AlertDue {
				at := ms(now)
				due = &at
			}
			if _, err := tx.Exec(ctx, deadLetterSQL, j.Delivery, j.Event, j.Target, j.Attempt, a.Error, ms(now), due); err != nil {
				return err
			}
		}
		return nil
	}
}

// lockAndExec takes the lock of j's lane (lockFIFOSQL), then runs query,
// both in one round trip.
func lockAndExec(ctx context.Context, tx pgx.Tx, j *queue.Job, query string, args []any) (pgconn.CommandTag, error) {
	b := &pgx.Batch{}
	b.Queue(lockFIFOSQL, j.Target, j.Lane)
	b.Queue(query, args...)
	br := tx.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return pgconn.CommandTag{}, fmt.Errorf("lane %s/%s: %w", j.Target, j.Lane, err)
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

// Deliveries returns the deliveries of the given events, keyed by event.
func (db *DB) Deliveries(ctx context.Context, events []int64) (map[int64][]queue.Delivery, error) {
	out := make(map[int64][]queue.Delivery, len(events))
	rows, err := db.pool.Query(ctx, `SELECT id, event, target, status, attempts, last_error, dead_reason, run_at, created_at, done_at,
		coalesce(lane, ''), skip_reason FROM deliveries WHERE event = ANY ($1::bigint[]) ORDER BY id`, ids(events))
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var d queue.Delivery
		var runAt, created int64
		var done *int64
		if err := rows.Scan(&d.ID, &d.Event, &d.Target, &d.Status, &d.Attempts, &d.LastError, &d.DeadReason, &runAt, &created, &done,
			&d.Lane, &d.SkipReason); err != nil {
			return nil, fmt.Errorf("list deliveries: %w", err)
		}
		d.Waiting = runAt == parked
		d.RunAt, d.CreatedAt, d.DoneAt = fromMS(runAt), fromMS(created), fromNullMS(done)
		out[d.Event] = append(out[d.Event], d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	return out, nil
}

// claimOneTx claims delivery id for lease inside tx, as a claim does, with
// its event, or returns nil if it is not due.
func claimOneTx(ctx context.Context, tx pgx.Tx, id int64, lease time.Duration, now time.Time) (*queue.Job, error) {
	j := &queue.Job{}
	err := tx.QueryRow(ctx, `UPDATE deliveries SET status = 'running', attempts = attempts + 1, run_at = $1, lease_token = nextval('lease_tokens')
		WHERE id = $2 AND status IN ('pending', 'retrying') AND run_at <= $3
		RETURNING id, event, target, attempts, lease_token, coalesce(lane, '')`, ms(now.Add(lease)), id, ms(now)).
		Scan(&j.Delivery, &j.Event, &j.Target, &j.Attempt, &j.Token, &j.Lane)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim delivery %d: %w", id, err)
	}
	if err := loadEvents(ctx, tx, []*queue.Job{j}); err != nil {
		return nil, err
	}
	return j, nil
}
