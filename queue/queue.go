// Package queue delivers: the worker pool that claims due deliveries under a
// lease, runs each at its target, retries it with backoff and puts it dead
// at the attempt limit, and the alerter that sends one alert for each
// delivery that went dead. It holds the types of the delivery queue (Job,
// Finish, Delivery, DeadLetter, …) and declares what it needs from a store
// engine (Store, AlertStore), which keeps one row per (event, target) and
// fences each completion by the claim's lease token: a worker whose lease
// expired and was taken over cannot overwrite the newer attempt.
package queue

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/rs/zerolog"
)

// Delivery statuses, as stored and shown.
const (
	Pending  = "pending"
	Running  = "running"
	Retrying = "retrying"
	Done     = "done"
	Dead     = "dead"
	Skipped  = "skipped"
	// Paused is a queued delivery of a paused target: no claim takes it,
	// no attempt is spent, no retry clock runs until the target resumes.
	Paused = "paused"
)

// Store is what the pool needs of a store engine: the deliveries it claims,
// renews, completes and returns. Every method returns once its write is
// durable, except CompleteAsync.
type Store interface {
	// Recover makes every delivery left running by a stopped process due
	// now and returns how many there were.
	Recover(ctx context.Context, now time.Time) (int64, error)
	// Claim leases up to n due deliveries until now+lease, leaving out
	// those in skip, and returns them with their events. A running
	// delivery whose lease has passed is due again; each claim counts an
	// attempt and hands out a fresh token.
	Claim(ctx context.Context, n int, lease time.Duration, now time.Time, skip []int64) ([]*Job, error)
	// Unclaim returns claimed jobs that never started to the queue, their
	// claim not counted as an attempt.
	Unclaim(ctx context.Context, jobs []*Job, now time.Time) error
	// NextDue says when the earliest queued delivery not in except is due.
	NextDue(ctx context.Context, except []int64) (at time.Time, ok bool, err error)
	// Renew extends to now+lease the leases of those of jobs still running
	// under their token, and returns how many.
	Renew(ctx context.Context, jobs []*Job, lease time.Duration, now time.Time) (int64, error)
	// Complete records the attempt and applies f while the job's token
	// still holds the lease, and returns ErrStale (only the attempt
	// recorded) if it does not.
	Complete(ctx context.Context, j *Job, f Finish, now time.Time) error
	// CompleteAsync is Complete that returns at once and calls done with
	// Complete's error once the write is durable; done must be quick. An
	// error returned means done is not called.
	CompleteAsync(ctx context.Context, j *Job, f Finish, now time.Time, done func(error)) error
	// Defer returns claimed jobs that never started to the queue, each
	// due at until[i], their claim not counted as an attempt: a throttled
	// target's jobs wait in the store for their turn, not in a worker.
	Defer(ctx context.Context, jobs []*Job, until []time.Time) error
	// Paused lists the paused targets.
	Paused(ctx context.Context) ([]PausedTarget, error)
}

// PausedTarget is a target held by hookbox pause, since Since.
type PausedTarget struct {
	Name  string
	Since time.Time
}

// PauseResult is what a pause or a resume did.
type PauseResult struct {
	// Already says the target was in the asked state before: paused
	// already (since Since), or not paused.
	Already bool
	Since   time.Time // pause: when the target was paused
	// Deliveries counts the target's deliveries held (pause: every paused
	// one) or released (resume).
	Deliveries int64
	// Running counts, on pause, the target's attempts running now: they
	// finish, and a failure among them waits paused for its retry.
	Running int64
}

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

	limit *limiter // the limiter whose slot the job holds, if it holds one
	// Lane is the order key of a delivery at an ordered target ("" none).
	Lane string
	// LaneRank and LaneVersion are, for a job of a lane, its event's
	// comparable version and the version as found ("" missing), read with
	// the event when the job is claimed, for its completion to record in
	// the lane without reading the event again (an engine may leave them
	// to its own reads).
	LaneRank, LaneVersion string
	// Promoted is set by the completion that made the next delivery of
	// the job's lane due: the pool claims again at once.
	Promoted bool
	// Next is the next delivery of the job's lane, claimed by the
	// completion that made it due (Finish.Lease), for the caller to run.
	Next *Job
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
	// Lease, for a job of a lane, lets the completion claim the lane's
	// next delivery, if it makes one due, under this lease (Job.Next).
	Lease time.Duration
}

// ErrStale is returned by Complete when the job's lease was taken over: the
// completion changed nothing but the attempt log.
var ErrStale = errors.New("lease lost: delivery was reclaimed")

// RunningKey names a running delivery the way its command's environment
// does (HOOKBOX_SOURCE, HOOKBOX_EVENT_ID, HOOKBOX_TARGET, and
// HOOKBOX_REPLICA: the replica that claimed it, "" where a store has one
// serve at a time and does not record it).
type RunningKey struct{ Source, EventID, Target, Replica string }

// Delivery is a delivery row as shown to users.
type Delivery struct {
	ID        int64
	Event     int64
	Target    string
	Status    string
	Attempts  int
	LastError string
	// DeadReason says why a dead delivery went dead before it had spent
	// its attempts ("permanent: exit 65", "payload removed by retention"),
	// or is "".
	DeadReason string
	RunAt      time.Time // next attempt (pending, retrying) or lease expiry (running)
	CreatedAt  time.Time
	DoneAt     time.Time // zero unless done, dead or skipped
	// Lane is the order key of a delivery at an ordered target ("" none);
	// Waiting is set while it waits behind its lane's head.
	Lane    string
	Waiting bool
	// SkipReason says why a skipped delivery was skipped ("stale: …",
	// "superseded by #N").
	SkipReason string
}

// DeadLetter is a row of the dead-letter table.
type DeadLetter struct {
	ID        int64
	Delivery  int64
	Event     int64
	Source    string
	EventID   string
	Type      string
	Target    string
	Attempts  int
	Error     string
	DeadAt    time.Time
	RevivedAt time.Time // zero unless a redelivery or replay revived it
	AlertedAt time.Time // zero unless the alert was sent
	AlertErr  string    // the last failed send's error
	// AlertDueAt is when the alert is tried next: zero once it was sent,
	// given up (AlertErr says why) or, for a revived letter, not needed.
	AlertDueAt time.Time
	AlertTries int // sends tried so far
}

// Stats are queue figures for metrics.
type Stats struct {
	// ByStatus counts pending, running, retrying, paused and dead deliveries. Done
	// ones are not counted: that would read the whole table on every
	// scrape (the metrics count successes as they happen instead).
	ByStatus     map[string]int64
	OldestQueued time.Time // creation of the oldest queued delivery; zero if none
}

// NewStats is Stats with every counted status at zero, for an engine to
// fill with AddQueued.
func NewStats() Stats {
	return Stats{ByStatus: map[string]int64{Pending: 0, Running: 0, Retrying: 0, Paused: 0, Dead: 0}}
}

// AddQueued counts n queued deliveries in status, the oldest of them
// created at oldest.
func (s *Stats) AddQueued(status string, n int64, oldest time.Time) {
	s.ByStatus[status] = n
	if s.OldestQueued.IsZero() || oldest.Before(s.OldestQueued) {
		s.OldestQueued = oldest
	}
}

// ReplaySelector chooses deliveries to queue again: those of one event
// (Event > 0), the dead ones (DeadOnly), those of events received in a
// period (Since, Until), any of them together, optionally of one Target.
type ReplaySelector struct {
	Event    int64
	DeadOnly bool
	Target   string
	Since    time.Time
	Until    time.Time
}

// Replayed is what a replay did.
type Replayed struct {
	Queued  int64 // deliveries put back to pending
	Swept   int64 // selected deliveries left out: their event's payload was removed by retention
	Running int64 // selected deliveries left out: running (or claimed to run) now
	Changed int64 // selected deliveries left out: claimed, done or swept while the replay ran
}

// Sort counts a selected delivery that replay leaves out (running, or its
// payload swept) and reports whether it is to be queued again.
func (r *Replayed) Sort(running, swept bool) bool {
	switch {
	case running:
		r.Running++
	case swept:
		r.Swept++
	default:
		return true
	}
	return false
}

// BackfillSelector chooses the events a backfill gives a delivery to.
type BackfillSelector struct {
	Target string
	Event  int64     // one event, or 0 for the period
	Since  time.Time // received at or after (zero: no bound)
	Until  time.Time // received before (zero: no bound)
	// Matches says whether the target takes an event of source and type
	// (its source(s) and events patterns).
	Matches func(source, typ string) bool
}

// Backfilled is what a backfill did.
type Backfilled struct {
	Queued int64 // deliveries created
	Swept  int64 // matching events left out: their payload was removed by retention
}

// WarnUnknownTargets logs the targets that queued deliveries are for (as
// queued counts them) but known (the config's targets) no longer has,
// renamed or removed since they were queued: each goes dead at its next
// attempt.
func WarnUnknownTargets(ctx context.Context, queued func(context.Context) (map[string]int64, error), known []string, log zerolog.Logger) {
	byTarget, err := queued(ctx)
	if err != nil {
		log.Warn().Err(err).Msg("could not count queued deliveries by target")
		return
	}
	for _, name := range slices.Sorted(maps.Keys(byTarget)) {
		if slices.Contains(known, name) {
			continue
		}
		log.Warn().Str("target", name).Int64("deliveries", byTarget[name]).
			Msg("queued deliveries are for a target the config no longer names: each goes dead at its next attempt; put the target back and run hookbox replay --dead to deliver them")
	}
}
