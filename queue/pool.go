package queue

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Handler runs one attempt of a job at one target.
type Handler interface {
	Handle(ctx context.Context, j *Job) Outcome
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, j *Job) Outcome

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, j *Job) Outcome { return f(ctx, j) }

// Outcome is what a handler reports. Err nil means success; a failure is
// retried until the attempt limit unless Err is (or wraps) a
// *PermanentError.
type Outcome struct {
	Err        error
	RetryAfter time.Duration // the target asked to wait at least this long
	HTTPStatus int
	ExitCode   *int
	Output     string
}

// PermanentError is a failure that no retry can mend, as the target said
// (a command's exit 65, an HTTP status the target lists in
// permanent_status). The pool puts its delivery dead at once, with its
// alert, without spending the remaining attempts. A handler returns one,
// wrapped or not, as Outcome.Err; the pool finds it with errors.As.
type PermanentError struct {
	Reason string // what made it permanent, for people: "exit 65", "status 410"
	Err    error  // the failure, recorded as the attempt's error
}

// Permanent marks err as a failure no retry can mend, for reason.
func Permanent(reason string, err error) error {
	return &PermanentError{Reason: reason, Err: err}
}

// Error is the failure's own message: the attempt records what happened,
// the delivery's dead reason says that it was permanent.
func (e *PermanentError) Error() string {
	if e.Err == nil {
		return "permanent failure: " + e.Reason
	}
	return e.Err.Error()
}

// Unwrap returns the failure.
func (e *PermanentError) Unwrap() error { return e.Err }

// Target is one configured destination.
type Target struct {
	Name        string
	MaxAttempts int
	Handler     Handler
	// Rate is how many attempts a second may start (0: no limit), from a
	// token bucket holding one second's worth (at least one).
	Rate float64
	// Concurrency is how many attempts may run at once (0: no limit).
	Concurrency int
}

// PoolConfig configures a Pool.
type PoolConfig struct {
	Workers     int
	MaxAttempts int
	Lease       time.Duration
	// Grace is how long running attempts may finish once Stop is called
	// before their contexts are cancelled and they are released.
	Grace time.Duration
	// Retry is the wait before each retry of a failed attempt (a longer
	// Retry-After from the target wins).
	Retry   Backoff
	Targets []Target
	// Alerting says whether dead deliveries queue an alert.
	Alerting bool
	// OnDead is called after a delivery went dead (to wake the alerter).
	OnDead func()
	// OnDone is called after a delivery succeeded, with its target and
	// its event's receive time.
	OnDone func(target string, receivedAt time.Time)
	// OnAttempt is called after each attempt's result is recorded, with
	// its target and outcome (ok, failed, dead, interrupted, stale).
	OnAttempt func(target, outcome string)
	// OnThrottled is called when n claimed jobs of target were deferred
	// for want of a token (reason ThrottledRate) or a slot
	// (ThrottledConcurrency).
	OnThrottled func(target, reason string, n int)
	// PausedEvery is how often the pool reads the paused targets (default
	// a second): a job claimed before its target was paused, still waiting
	// for a worker, goes back to the queue instead of starting.
	PausedEvery time.Duration

	// Poll is how often an idle pool looks for work that no wake-up told
	// it of (queued by another process); default a second. While the
	// store's wake-ups across processes are down (Listening(false)), it
	// looks at least every second.
	Poll   time.Duration
	Now    func() time.Time
	Logger zerolog.Logger
}

// Pool claims due deliveries and runs them on a fixed number of workers.
type Pool struct {
	s       Store
	cfg     PoolConfig
	targets map[string]Target
	log     zerolog.Logger

	wake  chan struct{}
	taken chan struct{} // a worker took a job, or a result was committed: there may be room to claim more
	jobs  chan *Job     // claimed jobs, ahead of the workers
	// handoff holds the next jobs of lanes, claimed by the completions of
	// their predecessors (Finish.Lease); slots counts the completions that
	// may put one there, so that a send never blocks the store's writer.
	handoff  chan *Job
	slots    chan struct{}
	stopping atomic.Bool

	// inflight holds the jobs claimed by this pool whose completion is not
	// yet committed, by delivery; claims skip them and their leases are
	// renewed.
	mu       sync.Mutex
	inflight map[int64]*Job

	// limits holds the limiter of each target with a rate or a
	// concurrency; paused, the paused targets as last read.
	limits map[string]*limiter
	paused atomic.Pointer[map[string]bool]

	stopClaim context.CancelFunc
	stopRun   context.CancelFunc
	runCtx    context.Context
	wg        sync.WaitGroup // workers
	pending   sync.WaitGroup // completions submitted, not yet committed
	dispatch  sync.WaitGroup
	renewal   sync.WaitGroup
	pausing   sync.WaitGroup
	stopOnce  sync.Once

	deaf        atomic.Bool  // the store's cross-process wake-ups are down
	workersUp   atomic.Int32 // worker goroutines running
	dispatching atomic.Bool  // the dispatcher runs
}

// prefetch is how many claimed jobs may wait for a worker. Claiming ahead
// lets one claim (one commit) feed many attempts; the lease of a waiting
// job runs, so the queue stays short.
func (p *Pool) prefetch() int { return max(2*p.cfg.Workers, 64) }

// NewPool returns a pool over the deliveries of s. Call Start, then Stop.
func NewPool(s Store, cfg PoolConfig) *Pool {
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.PausedEvery <= 0 {
		cfg.PausedEvery = time.Second
	}
	p := &Pool{
		s:        s,
		cfg:      cfg,
		targets:  make(map[string]Target, len(cfg.Targets)),
		log:      cfg.Logger,
		wake:     make(chan struct{}, 1),
		taken:    make(chan struct{}, 1),
		inflight: make(map[int64]*Job),
	}
	p.jobs = make(chan *Job, p.prefetch())
	p.handoff = make(chan *Job, cfg.Workers)
	p.slots = make(chan struct{}, cfg.Workers)
	for _, t := range cfg.Targets {
		p.targets[t.Name] = t
		if l := newLimiter(t.Rate, t.Concurrency); l != nil {
			if p.limits == nil {
				p.limits = make(map[string]*limiter)
			}
			p.limits[t.Name] = l
		}
	}
	p.paused.Store(&map[string]bool{})
	return p
}

// Notify tells the pool new work may be due. It never blocks.
func (p *Pool) Notify() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Listening tells the pool whether the store's wake-ups from other
// processes (PostgreSQL's notifications) reach it: while they do not, it
// looks for work at least every second, whatever Poll says.
func (p *Pool) Listening(up bool) { p.deaf.Store(!up) }

// poll is how long an idle pool waits before it looks again.
func (p *Pool) poll() time.Duration {
	d := p.cfg.Poll
	if d <= 0 {
		d = time.Second
	}
	if p.deaf.Load() {
		d = min(d, time.Second)
	}
	return d
}

// Start recovers deliveries left running by a previous process and starts
// the dispatcher and workers.
func (p *Pool) Start(ctx context.Context) error {
	if n, err := p.s.Recover(ctx, p.cfg.Now()); err != nil {
		return err
	} else if n > 0 {
		p.log.Warn().Int64("deliveries", n).Msg("retrying deliveries interrupted by the previous stop")
	}
	paused, err := p.readPaused(ctx)
	if err != nil {
		return err
	}
	p.warnPaused(paused)
	claimCtx, stopClaim := context.WithCancel(context.WithoutCancel(ctx))
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	p.stopClaim, p.stopRun, p.runCtx = stopClaim, stopRun, runCtx
	p.pausing.Add(1)
	go p.watchPaused(claimCtx)
	for range p.cfg.Workers {
		p.wg.Add(1)
		p.workersUp.Add(1) // counted before it runs: Alive is true once Start returns
		go p.worker()
	}
	p.dispatch.Add(1)
	p.dispatching.Store(true)
	go p.dispatcher(claimCtx)
	if p.cfg.Lease > 0 {
		p.renewal.Add(1)
		go p.renewer(runCtx)
	}
	return nil
}

// Alive returns nil while the dispatcher and every worker run (a worker
// busy with a long attempt runs), else an error saying what stopped.
func (p *Pool) Alive(context.Context) error {
	if !p.dispatching.Load() {
		return errors.New("the worker pool is not claiming (stopped, or not started)")
	}
	if n := int(p.workersUp.Load()); n < p.cfg.Workers {
		return fmt.Errorf("%d of %d workers run", n, p.cfg.Workers)
	}
	return nil
}

// Stop stops claiming, puts claimed jobs that have not started back in the
// queue, lets running attempts finish within the grace period, then cancels
// the rest, which are released to run at the next start. It returns once
// every result is committed.
func (p *Pool) Stop() {
	p.stopOnce.Do(func() {
		if p.stopClaim == nil {
			return
		}
		p.stopping.Store(true)
		p.stopClaim()
		p.dispatch.Wait()
		p.pausing.Wait()
		// Jobs claimed ahead that no worker has taken go back to the queue
		// as they were, in one write; the workers finish what they hold.
		var unstarted []*Job
	drain:
		for {
			select {
			case j := <-p.jobs:
				unstarted = append(unstarted, j)
			default:
				break drain
			}
		}
		close(p.jobs)
		p.unclaim(unstarted)
		done := make(chan struct{})
		go func() { p.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(p.cfg.Grace):
			p.log.Warn().Str("grace", p.cfg.Grace.String()).Msg("attempts still running after the grace period: cancelling and releasing them")
			p.stopRun()
			<-done
		}
		p.stopRun()
		p.renewal.Wait()
		p.pending.Wait()
		// Lanes' next jobs handed over by the last completions, which no
		// worker took: back to the queue.
		var handed []*Job
		for len(p.handoff) > 0 {
			handed = append(handed, <-p.handoff)
		}
		p.unclaim(handed)
	})
}

func (p *Pool) dispatcher(ctx context.Context) {
	defer p.dispatch.Done()
	defer p.dispatching.Store(false)
	for ctx.Err() == nil {
		// Claim when at least half the prefetch room is free (or nothing
		// waits at all), so claims are few and large under load. Results
		// still waiting for their commit do not count against the room:
		// they hold no body, and a claim is queued behind them, so its
		// commit makes them durable too. Waiting for them instead left
		// workers idle behind the writer.
		free := cap(p.jobs) - len(p.jobs)
		if free <= 0 || (free < cap(p.jobs)/2 && len(p.jobs) > 0) {
			select {
			case <-p.taken:
				continue
			case <-ctx.Done():
				return
			}
		}
		jobs, err := p.s.Claim(ctx, free, p.cfg.Lease, p.cfg.Now(), p.running())
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.log.Error().Err(err).Msg("claim failed; retrying in 1s")
			if !sleep(ctx, time.Second) {
				return
			}
			continue
		}
		p.mu.Lock()
		for _, j := range jobs {
			p.inflight[j.Delivery] = j
		}
		p.mu.Unlock()
		claimed := len(jobs)
		if p.limits != nil || p.anyPaused() {
			jobs = p.admit(jobs)
		}
		for _, j := range jobs {
			p.jobs <- j // never blocks: only this goroutine sends, and free was free
		}
		if claimed == free {
			continue // there may be more due work
		}
		if !p.waitForWork(ctx) {
			return
		}
	}
}

// running lists the deliveries this pool holds.
func (p *Pool) running() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]int64, 0, len(p.inflight))
	for id := range p.inflight {
		ids = append(ids, id)
	}
	return ids
}

func (p *Pool) finished(id int64) {
	p.mu.Lock()
	delete(p.inflight, id)
	p.mu.Unlock()
	select {
	case p.taken <- struct{}{}:
	default:
	}
}

// waitForWork sleeps until woken or until the next delivery is due. Every
// poll (a second by default) it looks again (a read), for work added by
// another process without a wake-up, e.g. a replay; an idle pool claims
// nothing, so it writes nothing.
func (p *Pool) waitForWork(ctx context.Context) bool {
	for {
		wait, due := p.poll(), false
		at, ok, err := p.s.NextDue(ctx, p.running())
		if err == nil && ok {
			if d := at.Sub(p.cfg.Now()); d < wait {
				wait, due = max(d, time.Millisecond), true
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-p.wake:
			t.Stop()
			return true
		case <-t.C:
			if due || err != nil { // let the claim report a failing store
				return true
			}
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (p *Pool) worker() {
	defer p.wg.Done()
	defer p.workersUp.Add(-1)
	for {
		// A lane's next job first: it is claimed, its lease running.
		var j *Job
		select {
		case j = <-p.handoff:
			<-p.slots
		default:
			select {
			case j = <-p.handoff:
				<-p.slots
			case next, ok := <-p.jobs:
				if !ok {
					return
				}
				j = next
				select {
				case p.taken <- struct{}{}:
				default:
				}
			}
		}
		if p.isPaused(j.Target) {
			// Claimed before the pause, not started: it waits, paused,
			// with the rest of its target's.
			p.unclaim([]*Job{j})
			continue
		}
		p.run(j)
	}
}

// unclaim returns jobs that never started to the queue.
func (p *Pool) unclaim(jobs []*Job) {
	if len(jobs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.s.Unclaim(ctx, jobs, p.cfg.Now()); err != nil {
		p.log.Error().Err(err).Int("deliveries", len(jobs)).Msg("could not return unstarted jobs to the queue; they run again once their lease passes (at the latest after the next start)")
	}
	for _, j := range jobs {
		p.releaseSlot(j, -1)
		p.finished(j.Delivery)
	}
}

func (p *Pool) run(j *Job) {
	start := p.cfg.Now()
	out := p.call(j)
	j.Body = nil // the result may wait for its commit; the body is no longer needed
	now := p.cfg.Now()
	p.releaseSlot(j, now.Sub(start))
	f := Finish{Attempt: Attempt{
		Number:     j.Attempt,
		StartedAt:  start,
		Duration:   now.Sub(start),
		Outcome:    "ok",
		HTTPStatus: out.HTTPStatus,
		ExitCode:   out.ExitCode,
		Output:     out.Output,
	}}
	if out.Err != nil {
		f.Attempt.Outcome = "failed"
		f.Attempt.Error = out.Err.Error()
		var perm *PermanentError
		switch {
		case p.runCtx.Err() != nil:
			// Cancelled by shutdown: not the target's fault.
			f.Release = true
			f.Attempt.Outcome = "interrupted"
			f.Attempt.Error = "interrupted by shutdown: " + f.Attempt.Error
		case errors.As(out.Err, &perm):
			f.Dead, f.Reason = true, "permanent: "+perm.Reason
		case j.Swept:
			// A swept payload is gone for good, and a target the config no
			// longer names stays gone until a restart with it: no retry can
			// succeed, so no waiting out the backoff (replay --dead runs it
			// once the target is back).
			f.Dead, f.Reason = true, "payload removed by retention"
		case !p.configured(j.Target):
			f.Dead, f.Reason = true, "target no longer configured"
		case j.Attempt >= p.maxAttempts(j.Target):
			f.Dead = true
		default:
			delay := p.cfg.Retry.Delay(j.Attempt)
			if out.RetryAfter > delay {
				delay = out.RetryAfter
			}
			f.Next = now.Add(delay)
		}
		f.AlertDue = f.Dead && p.cfg.Alerting
	}
	if j.Lane != "" && p.cfg.Lease > 0 && !f.Release && !p.stopping.Load() && len(p.jobs) == 0 {
		// The completion may claim the lane's next job for this pool,
		// when no claimed job waits for a worker: then a worker would
		// otherwise wait for the next claim, as one busy lane's does.
		// While jobs wait, the lane's next would wait behind them, and
		// the next claim takes it with the others for less of the store's
		// writer than a claim of its own (with its event) costs.
		select {
		case p.slots <- struct{}{}:
			f.Lease = p.cfg.Lease
		default:
		}
	}
	// The final write must survive shutdown: it is what keeps a success
	// from being run again, and a failure from being lost. It joins the next
	// group commit while this worker goes on; the delivery stays in
	// p.inflight (never claimed again here) until it is durable.
	p.pending.Add(1)
	err := p.s.CompleteAsync(context.WithoutCancel(p.runCtx), j, f, now, func(err error) {
		defer p.pending.Done()
		p.recorded(j, f, out, err)
	})
	if err != nil {
		p.pending.Done()
		p.recorded(j, f, out, err)
	}
}

// recorded reports a completion once its write is durable (or failed). It
// runs on the store's writer goroutine: it must not block.
func (p *Pool) recorded(j *Job, f Finish, out Outcome, err error) {
	if p.cfg.OnAttempt != nil && (err == nil || errors.Is(err, ErrStale)) {
		outcome := f.Attempt.Outcome
		switch {
		case errors.Is(err, ErrStale):
			outcome = "stale"
		case f.Dead:
			outcome = "dead"
		}
		p.cfg.OnAttempt(j.Target, outcome)
	}
	if f.Lease > 0 && (err == nil || errors.Is(err, ErrStale)) {
		if next := j.Next; err == nil && next != nil {
			// Held by this pool from now on; the slot goes with it.
			p.mu.Lock()
			p.inflight[next.Delivery] = next
			p.mu.Unlock()
			p.handoff <- next
		} else {
			<-p.slots
		}
	}
	switch {
	case errors.Is(err, ErrStale):
		p.finished(j.Delivery)
		jobLog(p.log.Warn(), j).Msg("lease was taken over while the attempt ran; its result was not applied")
		return
	case err != nil:
		// The pool keeps holding the delivery: claims skip it and its lease
		// is renewed, so it does not run again while the result waits.
		jobLog(p.log.Error(), j).Err(err).Msg("could not record the attempt's result (is the disk full?); writing it again until it goes in")
		p.pending.Add(1)
		go p.recordAgain(j, f, out)
		return
	}
	p.finished(j.Delivery)
	if j.Promoted {
		// The next delivery of its lane is due now: claim it at once
		// rather than at the next look.
		p.Notify()
	}
	switch {
	case out.Err == nil:
		jobLog(p.log.Debug(), j).Str("took", f.Attempt.Duration.String()).Msg("delivered")
		if p.cfg.OnDone != nil {
			p.cfg.OnDone(j.Target, j.ReceivedAt)
		}
	case f.Release:
		jobLog(p.log.Info(), j).Msg("attempt interrupted by shutdown; released")
	case f.Dead:
		e := jobLog(p.log.Error(), j).Str("error", f.Attempt.Error)
		if f.Reason != "" {
			e = e.Str("reason", f.Reason)
		}
		e.Msg("delivery is dead")
		if p.cfg.OnDead != nil {
			p.cfg.OnDead()
		}
	default:
		jobLog(p.log.Warn(), j).Str("error", f.Attempt.Error).Time("retry_at", f.Next).Msg("attempt failed")
		p.Notify()
	}
}

// Retrying a result that could not be written waits recordRetryMin, then
// twice as long each time, up to recordRetryMax (without jitter: only this
// process waits on it).
const (
	recordRetryMin = 100 * time.Millisecond
	recordRetryMax = 5 * time.Second
)

// recordAgain writes a result that could not be written (a full disk, an
// I/O error) again until it goes in, so that the delivery is not run again
// for want of its record. Once the pool stops it makes one last try and
// gives up: the delivery stays running in the store and runs again at the
// next start.
func (p *Pool) recordAgain(j *Job, f Finish, out Outcome) {
	defer p.pending.Done()
	done := f.Attempt.StartedAt.Add(f.Attempt.Duration)
	wait := Backoff{Base: recordRetryMin, Max: recordRetryMax}
	for tries := 1; ; tries++ {
		stopping := !sleep(p.runCtx, wait.Delay(tries))
		err := p.s.Complete(context.WithoutCancel(p.runCtx), j, f, done)
		if err == nil || errors.Is(err, ErrStale) {
			if err == nil {
				jobLog(p.log.Info(), j).Int("tries", tries+1).Msg("the attempt's result is recorded")
			}
			p.recorded(j, f, out, err)
			return
		}
		if stopping {
			p.finished(j.Delivery)
			jobLog(p.log.Error(), j).Err(err).Msg("stopping without the attempt's result recorded: the delivery runs again at the next start")
			return
		}
	}
}

// jobLog adds j's identity to a log event. The fields are added only to an
// event of an enabled level: a success logged at debug level costs nothing
// when debug is off.
func jobLog(e *zerolog.Event, j *Job) *zerolog.Event {
	return e.Int64("event", j.Event).Str("source", j.Source).Str("event_id", j.EventID).
		Str("target", j.Target).Int("attempt", j.Attempt)
}

// renewer renews the leases of every job this pool holds every third of
// the lease, in one write, until ctx ends (Stop, once the last attempt has
// ended). A job waiting for a worker, or an attempt that outlasts its lease
// (a command ignoring SIGTERM runs on through the kill grace), keeps its
// claim: without renewal another process could take the pair over and run
// it again meanwhile.
func (p *Pool) renewer(ctx context.Context) {
	defer p.renewal.Done()
	ticker := time.NewTicker(p.cfg.Lease / 3)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		p.mu.Lock()
		jobs := slices.Collect(maps.Values(p.inflight))
		p.mu.Unlock()
		if len(jobs) == 0 {
			continue
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_, err := p.s.Renew(wctx, jobs, p.cfg.Lease, p.cfg.Now())
		cancel()
		if err != nil {
			p.log.Error().Err(err).Msg("renewing leases failed; retrying every third of the lease: if it keeps failing, the leases run out and a delivery may run again while its attempt still runs")
		}
	}
}

// call runs the handler under recover, so a bug in one target cannot take
// the worker down.
func (p *Pool) call(j *Job) (out Outcome) {
	t, ok := p.targets[j.Target]
	if !ok {
		return Outcome{Err: fmt.Errorf("target %q is no longer configured (restore it and run hookbox replay --dead)", j.Target)}
	}
	if j.Swept {
		return Outcome{Err: errors.New("payload was removed by retention (retention.payloads); this delivery cannot run again")}
	}
	defer func() {
		if r := recover(); r != nil {
			jobLog(p.log.Error(), j).Interface("panic", r).Bytes("stack", debug.Stack()).Msg("handler panicked")
			out = Outcome{Err: fmt.Errorf("handler panicked: %v", r)}
		}
	}()
	return t.Handler.Handle(p.runCtx, j)
}

func (p *Pool) configured(target string) bool {
	_, ok := p.targets[target]
	return ok
}

func (p *Pool) maxAttempts(target string) int {
	if t, ok := p.targets[target]; ok && t.MaxAttempts > 0 {
		return t.MaxAttempts
	}
	if p.cfg.MaxAttempts > 0 {
		return p.cfg.MaxAttempts
	}
	return 1
}
