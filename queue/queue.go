// Package queue keeps the delivery queue: one row per (event, target), claimed
// by workers under a lease, retried with backoff, and dead-lettered at the
// attempt limit.
//
// A claim sets a fresh lease token; a completion is written only where the
// token still matches, so a worker whose lease expired and was taken over
// cannot overwrite the newer attempt (fencing).
package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"hookbox/store"
)

// Delivery statuses, as stored and shown.
const (
	Pending  = "pending"
	Running  = "running"
	Retrying = "retrying"
	Done     = "done"
	Dead     = "dead"
	Skipped  = "skipped"
)

// ErrNotFound is returned for an unknown delivery or event.
var ErrNotFound = errors.New("not found")

// Queue reads and writes the deliveries, attempts and dead_letters tables.
type Queue struct {
	db *store.DB
}

// New returns a Queue on db.
func New(db *store.DB) *Queue { return &Queue{db: db} }

// Job is one claimed delivery attempt with the event it carries.
type Job struct {
	Delivery    int64
	Event       int64
	Target      string
	Attempt     int
	Token       int64
	Source      string
	EventID     string
	Type        string
	ContentType string
	ReceivedAt  time.Time
	Body        []byte
	Swept       bool // the payload is gone (retention); the attempt cannot run
}

// EnqueueTx adds one pending delivery per target for event, inside tx.
func (q *Queue) EnqueueTx(ctx context.Context, tx *sql.Tx, event int64, targets []string, now time.Time) error {
	st, err := q.db.Stmt(ctx, tx, enqueueSQL)
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

// ReviveTx puts event's dead deliveries back to pending with their attempts
// reset (the sender, or an operator, asks again). Done and queued deliveries
// are untouched. It returns how many it revived.
func (q *Queue) ReviveTx(ctx context.Context, tx *sql.Tx, event int64, now time.Time) (int64, error) {
	r, err := tx.ExecContext(ctx, `UPDATE deliveries SET status = 'pending', attempts = 0, run_at = ?, last_error = '', dead_reason = '', done_at = NULL
		WHERE event = ? AND status = 'dead'`, now.UnixMilli(), event)
	if err != nil {
		return 0, fmt.Errorf("revive deliveries: %w", err)
	}
	n, err := r.RowsAffected()
	if err != nil || n == 0 {
		return n, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE dead_letters SET revived_at = ?, alert_due_at = NULL WHERE event = ? AND revived_at IS NULL`,
		now.UnixMilli(), event); err != nil {
		return 0, fmt.Errorf("revive dead letters: %w", err)
	}
	return n, nil
}

// Replay puts deliveries back to pending with attempts reset, whatever their
// status except running. It selects by event row id (event > 0), by dead
// status (deadOnly) or by receive time (since/until). Deliveries of events
// whose payload retention removed are left out (they could only go dead
// again) and counted in Swept; running ones (an attempt under way, or
// claimed for one) are left as they are and counted in Running.
func (q *Queue) Replay(ctx context.Context, sel ReplaySelector, now time.Time) (Replayed, error) {
	var where []string
	var args []any
	if sel.Event > 0 {
		where = append(where, `event = ?`)
		args = append(args, sel.Event)
	}
	if sel.DeadOnly {
		// Through the dead letters not revived: not a walk of every delivery.
		where = append(where, `id IN (SELECT delivery FROM dead_letters WHERE revived_at IS NULL) AND status = 'dead'`)
	}
	if sel.Target != "" {
		where = append(where, `target = ?`)
		args = append(args, sel.Target)
	}
	if !sel.Since.IsZero() || !sel.Until.IsZero() {
		sub := `event IN (SELECT id FROM events WHERE 1=1`
		if !sel.Since.IsZero() {
			sub += ` AND received_at >= ?`
			args = append(args, sel.Since.UnixMilli())
		}
		if !sel.Until.IsZero() {
			sub += ` AND received_at < ?`
			args = append(args, sel.Until.UnixMilli())
		}
		where = append(where, sub+`)`)
	}
	if len(where) == 0 {
		return Replayed{}, errors.New("replay: select an event, the dead letters or a period")
	}
	const swept = `EXISTS (SELECT 1 FROM events e WHERE e.id = deliveries.event AND e.swept_at IS NOT NULL)`
	// Chosen on a read connection, then queued again in small writes: a
	// period can hold hundreds of thousands of deliveries, and one write
	// transaction over them all would hold the store past a running
	// serve's busy timeout (its senders would get 503).
	var r Replayed
	var ids []int64
	rows, err := q.db.Reader().QueryContext(ctx, `SELECT id, status = 'running', `+swept+` FROM deliveries WHERE `+strings.Join(where, " AND "), args...)
	if err != nil {
		return Replayed{}, fmt.Errorf("replay: %w", err)
	}
	for rows.Next() {
		var id int64
		var running, gone bool
		if err := rows.Scan(&id, &running, &gone); err != nil {
			rows.Close()
			return Replayed{}, fmt.Errorf("replay: %w", err)
		}
		switch {
		case running:
			r.Running++
		case gone:
			r.Swept++
		default:
			ids = append(ids, id)
		}
	}
	if err := rows.Close(); err != nil {
		return Replayed{}, fmt.Errorf("replay: %w", err)
	}
	// Each write checks the selection again: a delivery may have been
	// claimed, or a dead one revived and done, or its payload swept, since
	// the read; those are left as they are and counted in Changed.
	recheck := `status != 'running' AND NOT ` + swept
	if sel.DeadOnly {
		recheck += ` AND status = 'dead'`
	}
	for start := 0; start < len(ids); start += replayBatch {
		list := idList(ids[start:min(start+replayBatch, len(ids))])
		var n int64
		err := q.db.Write(ctx, func(tx *sql.Tx) error {
			ctx := context.WithoutCancel(ctx) // see store.Write
			// Running by now (claimed since the read): left to finish.
			if _, err := tx.ExecContext(ctx, `UPDATE dead_letters SET revived_at = ?, alert_due_at = NULL
				WHERE revived_at IS NULL AND delivery IN (SELECT id FROM deliveries WHERE id IN (SELECT value FROM json_each(?)) AND status = 'dead' AND `+recheck+`)`,
				now.UnixMilli(), list); err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, `UPDATE deliveries SET status = 'pending', attempts = 0, run_at = ?, last_error = '', dead_reason = '', done_at = NULL
				WHERE id IN (SELECT value FROM json_each(?)) AND `+recheck, now.UnixMilli(), list)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return r, fmt.Errorf("replay: %d of %d deliveries were queued again before this, and the rest not (running the same replay again queues them): %w", r.Queued, len(ids), err)
		}
		r.Queued += n
	}
	r.Changed = int64(len(ids)) - r.Queued
	return r, nil
}

// replayBatch is how many deliveries one of Replay's writes queues again.
const replayBatch = 500

// Replayed is what Replay did.
type Replayed struct {
	Queued  int64 // deliveries put back to pending
	Swept   int64 // selected deliveries left out: their event's payload was removed by retention
	Running int64 // selected deliveries left out: running (or claimed to run) now
	Changed int64 // selected deliveries left out: claimed, done or swept while the replay ran
}

// ReplaySelector chooses deliveries for Replay.
type ReplaySelector struct {
	Event    int64
	DeadOnly bool
	Target   string
	Since    time.Time
	Until    time.Time
}

// Claim leases up to n due deliveries for lease and returns them with their
// events. A running delivery whose lease has passed is due again.
func (q *Queue) Claim(ctx context.Context, n int, lease time.Duration, now time.Time) ([]*Job, error) {
	return q.ClaimExcept(ctx, n, lease, now, nil)
}

// ClaimExcept is Claim leaving out the deliveries in skip: those this process
// is still running, whose lease may have passed while they run, so that the
// same pair never runs twice at once.
func (q *Queue) ClaimExcept(ctx context.Context, n int, lease time.Duration, now time.Time, skip []int64) ([]*Job, error) {
	var jobs []*Job
	skipJSON := idList(skip)
	wctx := context.WithoutCancel(ctx) // see dedupe.Ingest: no watcher goroutine per statement
	err := q.db.Write(ctx, func(tx *sql.Tx) error {
		ctx := wctx
		jobs = jobs[:0]
		claim, err := q.db.Stmt(ctx, tx, claimSQL)
		if err != nil {
			return err
		}
		rows, err := claim.QueryContext(ctx, now.Add(lease).UnixMilli(), now.UnixMilli(), skipJSON, n)
		if err != nil {
			return err
		}
		for rows.Next() {
			j := &Job{}
			if err := rows.Scan(&j.Delivery, &j.Event, &j.Target, &j.Attempt, &j.Token); err != nil {
				rows.Close()
				return err
			}
			jobs = append(jobs, j)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		return q.loadEvents(ctx, tx, jobs)
	})
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	return jobs, nil
}

const (
	// The subquery walks the deliveries_due index in claim order and stops
	// at the limit; the outer UPDATE touches only those rows. Without
	// INDEXED BY the planner prefers the status index and sorts the whole
	// backlog for every claim. "LIMIT ? + 0", not "LIMIT ?": SQLite reads a
	// bare bound LIMIT while planning and recompiles the statement whenever
	// its value changes, as the claim's size does from one claim to the next.
	claimSQL = `UPDATE deliveries SET status = 'running', attempts = attempts + 1, run_at = ?, lease_token = abs(random())
		WHERE id IN (SELECT id FROM deliveries INDEXED BY deliveries_due WHERE ` + store.DueCondition + ` AND run_at <= ?
			AND id NOT IN (SELECT value FROM json_each(?)) ORDER BY run_at, id LIMIT ? + 0)
		RETURNING id, event, target, attempts, lease_token`
	loadEventsSQL = `SELECT id, source, event_id, type, received_at, content_type, body, swept_at IS NOT NULL FROM events
		WHERE id IN (SELECT value FROM json_each(?))`
)

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
func (q *Queue) loadEvents(ctx context.Context, tx *sql.Tx, jobs []*Job) error {
	if len(jobs) == 0 {
		return nil
	}
	byEvent := make(map[int64][]*Job, len(jobs))
	ids := make([]int64, 0, len(jobs))
	for _, j := range jobs {
		if _, ok := byEvent[j.Event]; !ok {
			ids = append(ids, j.Event)
		}
		byEvent[j.Event] = append(byEvent[j.Event], j)
	}
	list := idList(ids)
	load, err := q.db.Stmt(ctx, tx, loadEventsSQL)
	if err != nil {
		return err
	}
	rows, err := load.QueryContext(ctx, list)
	if err != nil {
		return fmt.Errorf("load events: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var e Job
		var recv int64
		var body []byte
		var swept bool
		if err := rows.Scan(&e.Event, &e.Source, &e.EventID, &e.Type, &recv, &e.ContentType, &body, &swept); err != nil {
			return fmt.Errorf("load events: %w", err)
		}
		for _, j := range byEvent[e.Event] {
			j.Source, j.EventID, j.Type, j.ContentType = e.Source, e.EventID, e.Type, e.ContentType
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
func (q *Queue) Unclaim(ctx context.Context, jobs []*Job, now time.Time) error {
	if len(jobs) == 0 {
		return nil
	}
	err := q.db.Write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see store.Write
		for _, j := range jobs {
			if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET status = CASE WHEN attempts <= 1 THEN 'pending' ELSE 'retrying' END,
				attempts = max(attempts - 1, 0), run_at = ? WHERE id = ? AND lease_token = ? AND status = 'running'`,
				now.UnixMilli(), j.Delivery, j.Token); err != nil {
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

// NextDue returns when the earliest queued delivery other than those in
// except is due, or false if there is none. A pool leaves out the
// deliveries it holds: their leases may pass while they wait or run, but a
// claim would skip them, so they are no reason to wake.
func (q *Queue) NextDue(ctx context.Context, except []int64) (time.Time, bool, error) {
	var at int64
	err := q.db.Reader().QueryRowContext(ctx, `SELECT run_at FROM deliveries INDEXED BY deliveries_due
		WHERE `+store.DueCondition+` AND id NOT IN (SELECT value FROM json_each(?))
		ORDER BY run_at LIMIT 1`, idList(except)).Scan(&at)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("next due: %w", err)
	}
	return time.UnixMilli(at), true, nil
}

// QueuedByTarget counts the queued (pending, retrying, running)
// deliveries of each target, through the due index: the queue, not the
// whole table.
func (q *Queue) QueuedByTarget(ctx context.Context) (map[string]int64, error) {
	rows, err := q.db.Reader().QueryContext(ctx, `SELECT target, count(*) FROM deliveries INDEXED BY deliveries_due
		WHERE `+store.DueCondition+` GROUP BY target`)
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

// RunningKey names a running delivery the way its command's environment
// does (HOOKBOX_SOURCE, HOOKBOX_EVENT_ID, HOOKBOX_TARGET).
type RunningKey struct{ Source, EventID, Target string }

// Running lists the deliveries marked running. Before Recover, these are
// the ones a stopped process left behind.
func (q *Queue) Running(ctx context.Context) ([]RunningKey, error) {
	rows, err := q.db.Reader().QueryContext(ctx, `SELECT e.source, e.event_id, d.target
		FROM deliveries d INDEXED BY deliveries_due JOIN events e ON e.id = d.event
		WHERE `+store.DueCondition+` AND d.status = 'running'`)
	if err != nil {
		return nil, fmt.Errorf("running deliveries: %w", err)
	}
	defer rows.Close()
	var out []RunningKey
	for rows.Next() {
		var k RunningKey
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
func (q *Queue) Recover(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := q.db.Write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see store.Write
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

// Attempt is the record of one finished attempt.
type Attempt struct {
	Number     int
	StartedAt  time.Time
	Duration   time.Duration
	Outcome    string // ok, failed, interrupted, stale
	HTTPStatus int    // 0 if none
	ExitCode   *int   // nil if none
	Error      string
	Output     string
}

// Finish is what a worker reports for a job.
type Finish struct {
	Attempt  Attempt
	Next     time.Time // when to retry, for a failure below the limit
	Dead     bool      // the failure reached the attempt limit, or no retry can mend it
	Reason   string    // with Dead: why before the attempt limit ("permanent: exit 65"); "" at the limit
	Release  bool      // interrupted by shutdown: due again at once, attempt not counted
	AlertDue bool      // with Dead: queue an alert
}

// Renew sets the lease of each of jobs that is still running under its
// token to expire at now+lease, in one write, and returns how many it
// renewed. The others were taken over or have finished.
func (q *Queue) Renew(ctx context.Context, jobs []*Job, lease time.Duration, now time.Time) (int64, error) {
	var renewed int64
	err := q.db.Write(ctx, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see store.Write
		renewed = 0
		st, err := q.db.Stmt(ctx, tx, renewSQL)
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

// ErrStale is returned by Complete when the job's lease was taken over: the
// completion changed nothing but the attempt log.
var ErrStale = errors.New("lease lost: delivery was reclaimed")

// Complete records the attempt and moves the delivery to done, retrying,
// dead or (released) back to the queue, only while the job's lease token
// still matches. It returns ErrStale if the lease was taken over: then only
// the attempt log changed.
func (q *Queue) Complete(ctx context.Context, j *Job, f Finish, now time.Time) error {
	var stale bool
	err := q.db.Write(ctx, q.completeFn(ctx, j, f, now, &stale))
	return completeErr(j, err, stale)
}

// CompleteAsync is Complete without waiting for the commit: done gets
// Complete's error once the write is durable. done runs on the store's
// writer goroutine and must be quick. Workers use it so that they go on to
// the next job while many completions share one commit.
func (q *Queue) CompleteAsync(ctx context.Context, j *Job, f Finish, now time.Time, done func(error)) error {
	var stale bool
	err := q.db.WriteAsync(ctx, q.completeFn(ctx, j, f, now, &stale), func(err error) {
		done(completeErr(j, err, stale))
	})
	if err != nil {
		return fmt.Errorf("complete delivery %d: %w", j.Delivery, err)
	}
	return nil
}

func completeErr(j *Job, err error, stale bool) error {
	if err != nil {
		return fmt.Errorf("complete delivery %d: %w", j.Delivery, err)
	}
	if stale {
		return ErrStale
	}
	return nil
}

const (
	renewSQL   = `UPDATE deliveries SET run_at = ? WHERE id = ? AND lease_token = ? AND status = 'running'`
	enqueueSQL = `INSERT INTO deliveries (event, target, status, run_at, created_at) VALUES (?, ?, 'pending', ?, ?)`
	doneSQL    = `UPDATE deliveries SET status = 'done', done_at = ?, last_error = '' WHERE id = ? AND lease_token = ? AND status = 'running'`
	releaseSQL = `UPDATE deliveries SET status = 'retrying', run_at = ?, attempts = max(attempts - 1, 0), last_error = ?
		WHERE id = ? AND lease_token = ? AND status = 'running'`
	deadSQL    = `UPDATE deliveries SET status = 'dead', done_at = ?, last_error = ?, dead_reason = ? WHERE id = ? AND lease_token = ? AND status = 'running'`
	retrySQL   = `UPDATE deliveries SET status = 'retrying', run_at = ?, last_error = ? WHERE id = ? AND lease_token = ? AND status = 'running'`
	attemptSQL = `INSERT INTO attempts (delivery, attempt, started_at, duration_us, outcome, http_status, exit_code, error, output)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	deadLetterSQL = `INSERT INTO dead_letters (delivery, event, target, attempts, error, dead_at, alert_due_at) VALUES (?, ?, ?, ?, ?, ?, ?)`
)

func (q *Queue) completeFn(ctx context.Context, j *Job, f Finish, now time.Time, stale *bool) func(*sql.Tx) error {
	return func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx) // see store.Write
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
		st, err := q.db.Stmt(ctx, tx, query)
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
		ins, err := q.db.Stmt(ctx, tx, attemptSQL)
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
