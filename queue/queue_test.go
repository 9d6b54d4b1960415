package queue_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/dedupe"
	"hookbox/queue"
	"hookbox/store"
)

// MustOpen opens a store in a temp dir and returns a queue on it and an event
// store that enqueues every new event for targets.
func MustOpen(tb testing.TB, targets ...string) (*queue.Queue, *dedupe.Store) {
	tb.Helper()
	_, q, events := mustOpenDB(tb, targets...)
	return q, events
}

// mustOpenDB is MustOpen that also returns the store.
func mustOpenDB(tb testing.TB, targets ...string) (*store.DB, *queue.Queue, *dedupe.Store) {
	tb.Helper()
	db, err := store.Open(filepath.Join(tb.TempDir(), "hookbox.db"), store.Options{Logger: zerolog.Nop()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	q := queue.New(db)
	events := dedupe.New(db)
	events.OnNew = func(tx *sql.Tx, ev *dedupe.Event) error {
		return q.EnqueueTx(context.Background(), tx, ev.ID, targets, ev.ReceivedAt)
	}
	return db, q, events
}

// mustIngest stores a new event and returns its row id.
func mustIngest(tb testing.TB, events *dedupe.Store, id string, at time.Time) int64 {
	tb.Helper()
	res, err := events.Ingest(context.Background(), &dedupe.Event{
		Source: "shop", EventID: id, Type: "order.created", ReceivedAt: at, ContentType: "application/json", Body: []byte(`{}`),
	})
	if err != nil {
		tb.Fatal(err)
	}
	if res.Duplicate {
		tb.Fatalf("event %s: duplicate, want new", id)
	}
	return res.ID
}

func mustDelivery(tb testing.TB, q *queue.Queue, event int64) queue.Delivery {
	tb.Helper()
	m, err := q.Deliveries(context.Background(), []int64{event})
	if err != nil {
		tb.Fatal(err)
	}
	if len(m[event]) != 1 {
		tb.Fatalf("event %d has %d deliveries, want 1", event, len(m[event]))
	}
	return m[event][0]
}

// waitStatus waits up to 5 s for event's one delivery to reach status.
func waitStatus(tb testing.TB, q *queue.Queue, event int64, status string) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for d := mustDelivery(tb, q, event); d.Status != status; d = mustDelivery(tb, q, event) {
		if time.Now().After(deadline) {
			tb.Fatalf("delivery status=%s, want %s", d.Status, status)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitCount waits up to timeout for want of the deliveries of events to
// have status, and returns how many have it at the end.
func waitCount(tb testing.TB, q *queue.Queue, events []int64, status string, want int, timeout time.Duration) int {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		byEvent, err := q.Deliveries(context.Background(), events)
		if err != nil {
			tb.Fatal(err)
		}
		n := 0
		for _, ds := range byEvent {
			for _, d := range ds {
				if d.Status == status {
					n++
				}
			}
		}
		if n == want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestQueue_StaleCompletionIsFenced(t *testing.T) {
	ctx := context.Background()
	q, events := MustOpen(t, "web")
	t0 := time.Now()
	ev := mustIngest(t, events, "evt_1", t0)

	const lease = 100 * time.Millisecond
	first, err := q.Claim(ctx, 10, lease, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 1 {
		t.Fatalf("first claim: %d jobs, want 1", len(first))
	}
	if again, err := q.Claim(ctx, 10, lease, t0.Add(lease/2)); err != nil || len(again) != 0 {
		t.Fatalf("claim within the lease: %d jobs, err %v; want none", len(again), err)
	}

	// The lease passes: the delivery is presumed crashed and claimed again.
	t1 := t0.Add(2 * lease)
	second, err := q.Claim(ctx, 10, lease, t1)
	if err != nil {
		t.Fatal(err)
	}
	if len(second) != 1 {
		t.Fatalf("claim after the lease: %d jobs, want 1", len(second))
	}
	if first[0].Token == second[0].Token {
		t.Fatalf("both claims got token %d, want a fresh one", first[0].Token)
	}
	if second[0].Attempt != 2 {
		t.Errorf("second claim attempt=%d, want 2", second[0].Attempt)
	}

	ok := queue.Finish{Attempt: queue.Attempt{Number: 1, StartedAt: t0, Outcome: "ok"}}
	if err := q.Complete(ctx, first[0], ok, t1); !errors.Is(err, queue.ErrStale) {
		t.Fatalf("stale completion: err=%v, want ErrStale", err)
	}
	d := mustDelivery(t, q, ev)
	if d.Status != queue.Running || d.Attempts != 2 {
		t.Errorf("after the stale completion: status=%s attempts=%d, want running 2 (unchanged)", d.Status, d.Attempts)
	}

	failed := queue.Finish{Attempt: queue.Attempt{Number: 2, StartedAt: t1, Outcome: "failed", Error: "status 500"}, Next: t1.Add(time.Second)}
	if err := q.Complete(ctx, second[0], failed, t1); err != nil {
		t.Fatalf("current completion: %v", err)
	}
	d = mustDelivery(t, q, ev)
	if d.Status != queue.Retrying || d.Attempts != 2 || d.LastError != "status 500" {
		t.Errorf("after the current completion: status=%s attempts=%d last_error=%q, want retrying 2 %q", d.Status, d.Attempts, d.LastError, "status 500")
	}

	attempts, err := q.Attempts(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, a := range attempts {
		outcomes = append(outcomes, a.Outcome)
	}
	if fmt.Sprint(outcomes) != "[stale failed]" {
		t.Errorf("attempt log=%v, want [stale failed]", outcomes)
	}
}

func TestQueue_SamePairNeverTwiceAtOnce(t *testing.T) {
	t.Run("Many workers", testManyWorkers)
	t.Run("Attempt outlasting its lease", testOutlastingLease)
	t.Run("Job waiting for a worker past its lease", testWaitingPastLease)
	t.Run("Clock past the lease", testClockPastLease)
}

// testClockPastLease runs an attempt while the clock jumps past its lease,
// before any renewal: the row is due again in the store, and the pool, which
// claims on, must still leave the delivery it is running alone, and must
// not spin claiming it either.
func testClockPastLease(t *testing.T) {
	db, q, events := mustOpenDB(t, "slow")
	start := time.Now()
	ev := mustIngest(t, events, "evt_clock", start)
	var mu sync.Mutex
	now := start
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	runs := 0
	started, release := make(chan struct{}, 2), make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	handler := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) queue.Outcome {
		mu.Lock()
		runs++
		mu.Unlock()
		started <- struct{}{}
		<-release
		return queue.Outcome{}
	})
	p := queue.NewPool(q, queue.PoolConfig{
		Workers:     4,
		MaxAttempts: 5,
		Lease:       time.Minute,
		Grace:       time.Second,
		Now:         clock,
		Retry:       queue.Backoff{Base: 10 * time.Millisecond, Max: 20 * time.Millisecond, Jitter: 0.2},
		Targets:     []queue.Target{{Name: "slow", Handler: handler}},
		Logger:      zerolog.Nop(),
	})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	defer unblock() // runs before Stop, which waits for the handler
	<-started
	mu.Lock()
	now = start.Add(2 * time.Minute) // the claimed lease (start+1m) has passed
	mu.Unlock()
	if due, ok, err := q.NextDue(context.Background(), nil); err != nil || !ok || due.After(clock()) {
		t.Fatalf("next due %v %v %v: want the running delivery due again in the store", due, ok, err)
	}
	for range 5 {
		p.Notify()
		time.Sleep(20 * time.Millisecond)
	}
	// Nothing else is due: the pool waits (up to its 1 s safety net)
	// instead of claiming again and again.
	before := db.Stats().Commits
	time.Sleep(300 * time.Millisecond)
	if n := db.Stats().Commits - before; n > 5 {
		t.Errorf("%d commits in 300 ms while only a held delivery was past its lease, want a few at most", n)
	}
	unblock()
	waitStatus(t, q, ev, queue.Done)
	p.Stop()
	mu.Lock()
	defer mu.Unlock()
	if runs != 1 {
		t.Errorf("handler ran %d times; want once", runs)
	}
}

func testManyWorkers(t *testing.T) {
	q, events := MustOpen(t, "a", "b")
	const n = 25
	var ids []int64
	for i := range n {
		ids = append(ids, mustIngest(t, events, fmt.Sprintf("evt_%d", i), time.Now()))
	}

	var mu sync.Mutex
	running := map[int64]int{}
	succeeded := map[int64]int{}
	tries := map[int64]int{}
	overlap := 0
	handler := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) queue.Outcome {
		mu.Lock()
		running[j.Delivery]++
		if running[j.Delivery] > 1 {
			overlap++
		}
		tries[j.Delivery]++
		fail := j.Delivery%3 == 0 && tries[j.Delivery] == 1
		mu.Unlock()
		time.Sleep(time.Duration(j.Delivery%4) * time.Millisecond)
		mu.Lock()
		running[j.Delivery]--
		if !fail {
			succeeded[j.Delivery]++
		}
		mu.Unlock()
		if fail {
			return queue.Outcome{Err: errors.New("first try fails")}
		}
		return queue.Outcome{}
	})

	p := queue.NewPool(q, queue.PoolConfig{
		Workers:     16,
		MaxAttempts: 5,
		Lease:       time.Minute,
		Grace:       time.Second,
		Retry:       queue.Backoff{Base: 5 * time.Millisecond, Max: 20 * time.Millisecond, Jitter: 0.2},
		Targets:     []queue.Target{{Name: "a", Handler: handler}, {Name: "b", Handler: handler}},
		Logger:      zerolog.Nop(),
	})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)

	if done := waitCount(t, q, ids, queue.Done, 2*n, 8*time.Second); done != 2*n {
		t.Fatalf("%d deliveries done, want %d", done, 2*n)
	}
	p.Stop()

	mu.Lock()
	defer mu.Unlock()
	if overlap > 0 {
		t.Errorf("%d attempts ran while the same delivery was already running, want 0", overlap)
	}
	if len(succeeded) != 2*n {
		t.Errorf("%d deliveries succeeded, want %d", len(succeeded), 2*n)
	}
	for id, c := range succeeded {
		if c != 1 {
			t.Errorf("delivery %d succeeded %d times, want exactly 1", id, c)
		}
	}
}

// testOutlastingLease runs an attempt longer than its lease (as a command
// that ignores SIGTERM does through the kill grace): the live attempt must
// keep its lease, so no idle worker takes the pair over and runs it again.
func testOutlastingLease(t *testing.T) {
	q, events := MustOpen(t, "slow")
	ev := mustIngest(t, events, "evt_slow", time.Now())
	var mu sync.Mutex
	runs, concurrent, maxConcurrent := 0, 0, 0
	handler := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) queue.Outcome {
		mu.Lock()
		runs++
		concurrent++
		maxConcurrent = max(maxConcurrent, concurrent)
		mu.Unlock()
		time.Sleep(time.Second)
		mu.Lock()
		concurrent--
		mu.Unlock()
		return queue.Outcome{}
	})
	p := queue.NewPool(q, queue.PoolConfig{
		Workers:     4,
		MaxAttempts: 5,
		Lease:       300 * time.Millisecond,
		Grace:       time.Second,
		Retry:       queue.Backoff{Base: 10 * time.Millisecond, Max: 20 * time.Millisecond, Jitter: 0.2},
		Targets:     []queue.Target{{Name: "slow", Handler: handler}},
		Logger:      zerolog.Nop(),
	})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	// Twice the lease into the attempt, a claim from outside this pool (its
	// own workers skip what it holds anyway) finds the lease renewed.
	time.Sleep(600 * time.Millisecond)
	if jobs, err := q.Claim(context.Background(), 10, 300*time.Millisecond, time.Now()); err != nil || len(jobs) != 0 {
		t.Errorf("a claim while the attempt ran took %d job(s) (%v): its lease was not renewed", len(jobs), err)
	}
	waitStatus(t, q, ev, queue.Done)
	p.Stop()
	mu.Lock()
	defer mu.Unlock()
	if runs != 1 || maxConcurrent != 1 {
		t.Errorf("handler ran %d times, at most %d at once; want once", runs, maxConcurrent)
	}
	if d := mustDelivery(t, q, ev); d.Attempts != 1 {
		t.Errorf("attempts=%d, want 1", d.Attempts)
	}
}

// testWaitingPastLease: a job claimed ahead waits for the only worker
// longer than its lease; its lease is renewed too, so nothing else takes it.
func testWaitingPastLease(t *testing.T) {
	q, events := MustOpen(t, "slow")
	first := mustIngest(t, events, "evt_1", time.Now().Add(-time.Second))
	second := mustIngest(t, events, "evt_2", time.Now())
	p := queue.NewPool(q, queue.PoolConfig{
		Workers: 1, MaxAttempts: 1, Lease: 300 * time.Millisecond, Grace: time.Second,
		Targets: []queue.Target{{Name: "slow", Handler: queue.HandlerFunc(func(ctx context.Context, j *queue.Job) queue.Outcome {
			time.Sleep(time.Second)
			return queue.Outcome{}
		})}},
		Logger: zerolog.Nop(),
	})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	time.Sleep(600 * time.Millisecond) // twice the lease into the first attempt
	if d := mustDelivery(t, q, second); d.Status != queue.Running {
		t.Fatalf("second delivery %s, want running (claimed ahead)", d.Status)
	}
	if jobs, err := q.Claim(context.Background(), 10, 300*time.Millisecond, time.Now()); err != nil || len(jobs) != 0 {
		t.Errorf("a claim while the job waited took %d job(s) (%v): its lease was not renewed", len(jobs), err)
	}
	waitStatus(t, q, first, queue.Done)
	waitStatus(t, q, second, queue.Done)
	if d := mustDelivery(t, q, second); d.Attempts != 1 {
		t.Errorf("second delivery: attempts=%d, want 1", d.Attempts)
	}
}

// TestPool_StopReturnsUnstartedJobs: jobs claimed ahead of a busy worker go
// back to the queue at Stop as they were, attempts not counted, and nothing
// but the running attempt reaches the target.
func TestPool_StopReturnsUnstartedJobs(t *testing.T) {
	q, events := MustOpen(t, "a")
	const n = 10
	var ids []int64
	for i := range n {
		ids = append(ids, mustIngest(t, events, fmt.Sprintf("evt_%d", i), time.Now()))
	}
	started := make(chan struct{}, n)
	release := make(chan struct{})
	handler := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) queue.Outcome {
		started <- struct{}{}
		<-release
		return queue.Outcome{}
	})
	p := queue.NewPool(q, queue.PoolConfig{
		Workers: 1, MaxAttempts: 5, Lease: time.Minute, Grace: 10 * time.Second,
		Retry:   queue.Backoff{Base: time.Second, Max: time.Second, Jitter: 0.2},
		Targets: []queue.Target{{Name: "a", Handler: handler}},
		Logger:  zerolog.Nop(),
	})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("no attempt started")
	}
	stopped := make(chan struct{})
	go func() { p.Stop(); close(stopped) }()
	// Stop returns the waiting jobs while the running attempt still runs.
	if pending := waitCount(t, q, ids, queue.Pending, n-1, 5*time.Second); pending != n-1 {
		t.Fatalf("%d of %d waiting jobs returned to the queue while the attempt ran", pending, n-1)
	}
	close(release)
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return")
	}
	if got := len(started); got != 0 {
		t.Errorf("%d more attempts started after Stop, want 0", got)
	}
	byEvent, err := q.Deliveries(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	done, pending := 0, 0
	for _, ds := range byEvent {
		for _, d := range ds {
			switch {
			case d.Status == queue.Done && d.Attempts == 1:
				done++
			case d.Status == queue.Pending && d.Attempts == 0:
				pending++
			default:
				t.Errorf("delivery %d: %s after %d attempts, want done after 1 or pending after 0", d.ID, d.Status, d.Attempts)
			}
		}
	}
	if done != 1 || pending != n-1 {
		t.Errorf("done=%d pending=%d, want 1 and %d", done, pending, n-1)
	}
}

// An event with an empty body (the id came from a header) is delivered like
// any other: an empty payload is not a payload retention removed.
func TestQueue_EmptyBodyIsNotSwept(t *testing.T) {
	q, events := MustOpen(t, "sink")
	res, err := events.Ingest(context.Background(), &dedupe.Event{
		Source: "shop", EventID: "empty", ReceivedAt: time.Now(), Body: []byte{},
	})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := q.Claim(context.Background(), 10, time.Minute, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].Event != res.ID {
		t.Fatalf("claimed %+v, want the empty event's delivery", jobs)
	}
	if jobs[0].Swept || len(jobs[0].Body) != 0 {
		t.Errorf("empty body claimed as swept=%v body=%q, want not swept and empty", jobs[0].Swept, jobs[0].Body)
	}
}

// A delivery whose payload retention removed goes dead at its first
// attempt (with an alert), instead of being retried through every backoff.
// startOneWorker starts a pool of one worker with a single target, 5
// attempts and an hour's backoff (so a second attempt never comes within a
// test), stopped when the test ends.
func startOneWorker(t *testing.T, q *queue.Queue, target string, h queue.HandlerFunc) {
	t.Helper()
	p := queue.NewPool(q, queue.PoolConfig{
		Workers: 1, MaxAttempts: 5, Lease: time.Minute, Grace: time.Second,
		Retry:   queue.Backoff{Base: time.Hour, Max: time.Hour, Jitter: 0.2},
		Targets: []queue.Target{{Name: target, Handler: h}},
		Logger:  zerolog.Nop(),
	})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
}

func TestPool_SweptPayloadGoesDeadAtOnce(t *testing.T) {
	db, q, events := mustOpenDB(t, "sink")
	ev := mustIngest(t, events, "evt_swept", time.Now())
	err := db.Write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE events SET body = NULL, headers = NULL, swept_at = 1 WHERE id = ?`, ev)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	startOneWorker(t, q, "sink", func(context.Context, *queue.Job) queue.Outcome {
		calls.Add(1)
		return queue.Outcome{}
	})
	waitStatus(t, q, ev, queue.Dead)
	if d := mustDelivery(t, q, ev); d.Attempts != 1 || !strings.Contains(d.LastError, "retention") {
		t.Errorf("dead after %d attempt(s), error %q; want 1, naming retention", d.Attempts, d.LastError)
	}
	if d := mustDelivery(t, q, ev); d.DeadReason != "payload removed by retention" {
		t.Errorf("dead reason %q, want %q", d.DeadReason, "payload removed by retention")
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("the target ran %d time(s) without a payload", n)
	}
}

// A delivery to a target the config no longer names (renamed, removed
// between restarts) goes dead at its first attempt, saying so, instead of
// failing through every retry and its backoff.
func TestPool_RemovedTargetGoesDeadAtOnce(t *testing.T) {
	_, q, events := mustOpenDB(t, "old-name")
	ev := mustIngest(t, events, "evt_orphan", time.Now())
	startOneWorker(t, q, "new-name", func(context.Context, *queue.Job) queue.Outcome { return queue.Outcome{} })
	waitStatus(t, q, ev, queue.Dead)
	if d := mustDelivery(t, q, ev); d.Attempts != 1 || !strings.Contains(d.LastError, `target "old-name" is no longer configured`) {
		t.Errorf("dead after %d attempt(s), error %q; want 1, naming the missing target", d.Attempts, d.LastError)
	}
	if d := mustDelivery(t, q, ev); d.DeadReason != "target no longer configured" {
		t.Errorf("dead reason %q, want %q", d.DeadReason, "target no longer configured")
	}
}

// A failed attempt's log lines name the event and target, so that an
// operator can find the delivery they are about.
func TestPool_LogsNameTheDelivery(t *testing.T) {
	q, events := MustOpen(t, "sink")
	ev := mustIngest(t, events, "evt_logged", time.Now())
	var buf strings.Builder
	p := queue.NewPool(q, queue.PoolConfig{
		Workers: 1, MaxAttempts: 1, Lease: time.Minute, Grace: time.Second,
		Targets: []queue.Target{{Name: "sink", Handler: queue.HandlerFunc(func(context.Context, *queue.Job) queue.Outcome {
			return queue.Outcome{Err: errors.New("connection refused")}
		})}},
		Logger: zerolog.New(&syncBuilder{b: &buf}),
	})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, q, ev, queue.Dead)
	p.Stop()
	var line string
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, "delivery is dead") {
			line = l
		}
	}
	for _, want := range []string{`"event_id":"evt_logged"`, `"source":"shop"`, `"target":"sink"`, `"attempt":1`, `"error":"connection refused"`} {
		if !strings.Contains(line, want) {
			t.Errorf("dead delivery's log line %q lacks %s", line, want)
		}
	}
}

type syncBuilder struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b == nil {
		s.b = &strings.Builder{}
	}
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b == nil {
		return ""
	}
	return s.b.String()
}

// A claim and a completion that share a group commit with a failing write
// run again when the batch is redone write by write; what they report must
// be what the second run did, not both runs.
func TestQueue_RedoneBatchReportsOnce(t *testing.T) {
	db, q, events := mustOpenDB(t, "sink")
	ctx := context.Background()
	now := time.Now()
	var ids []int64
	for i := range 3 {
		ids = append(ids, mustIngest(t, events, fmt.Sprintf("evt_%d", i), now.Add(-time.Minute)))
	}
	// Hold the writer so that the next writes queue up into one batch.
	hold, held := make(chan struct{}), make(chan struct{})
	go db.Write(ctx, func(*sql.Tx) error { close(held); <-hold; return nil })
	<-held
	type claimed struct {
		jobs []*queue.Job
		err  error
	}
	claims := make(chan claimed, 1)
	go func() {
		jobs, err := q.Claim(ctx, 10, time.Minute, now)
		claims <- claimed{jobs, err}
	}()
	failed := make(chan error, 1)
	go func() {
		failed <- db.Write(ctx, func(tx *sql.Tx) error {
			_, err := tx.Exec(`INSERT INTO deliveries (event, target, status, run_at, created_at) VALUES (?, 'x', 'bogus', 0, 0)`, ids[0])
			return err
		})
	}()
	time.Sleep(50 * time.Millisecond) // both queued behind the held write
	close(hold)
	c := <-claims
	if err := <-failed; err == nil {
		t.Fatal("the bogus write succeeded; the batch was not redone")
	}
	if c.err != nil {
		t.Fatal(c.err)
	}
	if len(c.jobs) != len(ids) {
		t.Fatalf("claim returned %d jobs, want %d (one per delivery)", len(c.jobs), len(ids))
	}
	for _, j := range c.jobs {
		// The token handed out is the one stored: completing with it works.
		f := queue.Finish{Attempt: queue.Attempt{Number: j.Attempt, StartedAt: now, Outcome: "ok"}}
		if err := q.Complete(ctx, j, f, now); err != nil {
			t.Errorf("delivery %d: complete with the claimed token: %v", j.Delivery, err)
		}
		if d := mustDelivery(t, q, j.Event); d.Status != queue.Done || d.Attempts != 1 {
			t.Errorf("delivery %d: %s after %d attempts, want done after 1", j.Delivery, d.Status, d.Attempts)
		}
	}
}

// A job claimed for a retry and returned unstarted goes back to retrying,
// its attempt not counted.
func TestQueue_UnclaimRetry(t *testing.T) {
	q, events := MustOpen(t, "sink")
	ctx := context.Background()
	now := time.Now()
	ev := mustIngest(t, events, "evt_u", now.Add(-time.Minute))
	jobs, err := q.Claim(ctx, 1, time.Minute, now)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %v %v", jobs, err)
	}
	f := queue.Finish{Attempt: queue.Attempt{Number: 1, StartedAt: now, Outcome: "failed", Error: "boom"}, Next: now}
	if err := q.Complete(ctx, jobs[0], f, now); err != nil {
		t.Fatal(err)
	}
	if jobs, err = q.Claim(ctx, 1, time.Minute, now); err != nil || len(jobs) != 1 || jobs[0].Attempt != 2 {
		t.Fatalf("second claim: %+v %v, want attempt 2", jobs, err)
	}
	if err := q.Unclaim(ctx, jobs, now); err != nil {
		t.Fatal(err)
	}
	if d := mustDelivery(t, q, ev); d.Status != queue.Retrying || d.Attempts != 1 {
		t.Errorf("after unclaim: %s after %d attempts, want retrying after 1", d.Status, d.Attempts)
	}
}

// Renew extends the leases of the jobs still running under their token and
// leaves the others alone.
func TestQueue_Renew(t *testing.T) {
	q, events := MustOpen(t, "sink")
	ctx := context.Background()
	now := time.Now()
	mustIngest(t, events, "evt_a", now.Add(-time.Minute))
	mustIngest(t, events, "evt_b", now.Add(-time.Minute))
	jobs, err := q.Claim(ctx, 2, time.Minute, now)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	done := jobs[0]
	if err := q.Complete(ctx, done, queue.Finish{Attempt: queue.Attempt{Number: 1, StartedAt: now, Outcome: "ok"}}, now); err != nil {
		t.Fatal(err)
	}
	later := now.Add(30 * time.Second)
	n, err := q.Renew(ctx, jobs, time.Minute, later)
	if err != nil || n != 1 {
		t.Fatalf("renew: %d renewed, %v; want 1 (the other is done)", n, err)
	}
	running := jobs[1]
	if d := mustDelivery(t, q, running.Event); d.Status != queue.Running || !d.RunAt.Equal(later.Add(time.Minute).Truncate(time.Millisecond)) {
		t.Errorf("renewed delivery: %s, lease until %v; want running until %v", d.Status, d.RunAt, later.Add(time.Minute).Truncate(time.Millisecond))
	}
	if d := mustDelivery(t, q, done.Event); d.Status != queue.Done {
		t.Errorf("finished delivery: %s after renew, want done", d.Status)
	}
}

// An idle pool writes nothing (it looks for due work with reads), and still
// finds work added behind its back, as a replay from another process adds
// it, within its once-a-second look.
func TestPool_IdleWritesNothing(t *testing.T) {
	db, q, events := mustOpenDB(t, "sink")
	p := queue.NewPool(q, queue.PoolConfig{
		Workers: 2, MaxAttempts: 1, Lease: time.Minute, Grace: time.Second,
		Targets: []queue.Target{{Name: "sink", Handler: queue.HandlerFunc(func(context.Context, *queue.Job) queue.Outcome { return queue.Outcome{} })}},
		Logger:  zerolog.Nop(),
	})
	start := db.Stats()
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	// Starting writes twice: the recovery of interrupted deliveries and the
	// first claim.
	for deadline := time.Now().Add(5 * time.Second); db.Stats().Writes-start.Writes < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the pool made %d writes starting, want 2", db.Stats().Writes-start.Writes)
		}
	}
	before := db.Stats()
	time.Sleep(1300 * time.Millisecond)
	if w := db.Stats().Writes - before.Writes; w != 0 {
		t.Errorf("an idle pool made %d writes in 1.3 s, want none", w)
	}
	ev := mustIngest(t, events, "evt_behind", time.Now()) // no Notify
	waitStatus(t, q, ev, queue.Done)
}

// A result that cannot be written (a full disk; here a trigger refusing
// it) is written again until it goes in, the delivery held meanwhile: the
// target does not see it a second time when the lease would have passed.
// A pool stopped before the result goes in leaves it running, for the next
// start to run again.
func TestPool_UnwrittenResultIsWrittenAgain(t *testing.T) {
	db, q, events := mustOpenDB(t, "sink")
	refuse := func(on bool) {
		t.Helper()
		stmt := `DROP TRIGGER IF EXISTS refuse_done`
		if on {
			stmt = `CREATE TRIGGER refuse_done BEFORE UPDATE OF status ON deliveries WHEN NEW.status = 'done'
				BEGIN SELECT RAISE(ABORT, 'database or disk is full (simulated)'); END`
		}
		if err := db.Write(context.Background(), func(tx *sql.Tx) error { _, err := tx.Exec(stmt); return err }); err != nil {
			t.Fatal(err)
		}
	}
	var calls atomic.Int64
	var logs syncBuilder
	newPool := func() *queue.Pool {
		return queue.NewPool(q, queue.PoolConfig{
			Workers:     1,
			MaxAttempts: 5,
			Lease:       300 * time.Millisecond, // passes several times while the result waits
			Grace:       time.Second,
			Retry:       queue.Backoff{Base: time.Hour, Max: time.Hour, Jitter: 0.2},
			Targets: []queue.Target{{Name: "sink", Handler: queue.HandlerFunc(func(context.Context, *queue.Job) queue.Outcome {
				calls.Add(1)
				return queue.Outcome{}
			})}},
			Logger: zerolog.New(&logs),
		})
	}

	refuse(true)
	ev := mustIngest(t, events, "evt_full", time.Now())
	p := newPool()
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "could not record the attempt's result") {
		if time.Now().After(deadline) {
			t.Fatalf("no failed result logged: %s", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(time.Second) // past the lease three times over
	if d := mustDelivery(t, q, ev); d.Status != queue.Running || calls.Load() != 1 {
		t.Fatalf("while the result cannot be written: status %s, target ran %d time(s); want running, once", d.Status, calls.Load())
	}
	refuse(false)
	waitStatus(t, q, ev, queue.Done)
	p.Stop()
	if n := calls.Load(); n != 1 {
		t.Errorf("the target ran %d times, want once: the result was written again, not the delivery", n)
	}
	if d := mustDelivery(t, q, ev); d.Attempts != 1 {
		t.Errorf("attempts=%d, want 1", d.Attempts)
	}

	// Stopped while the result still cannot be written: left running.
	refuse(true)
	ev2 := mustIngest(t, events, "evt_full_2", time.Now())
	p = newPool()
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); calls.Load() < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second delivery never ran")
		}
	}
	stopped := make(chan struct{})
	go func() { p.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not return while a result could not be written")
	}
	if d := mustDelivery(t, q, ev2); d.Status != queue.Running {
		t.Errorf("after a stop with the result unwritten: status %s, want running (run again at the next start)", d.Status)
	}
	if !strings.Contains(logs.String(), "stopping without the attempt's result recorded") {
		t.Errorf("the give-up was not logged: %s", logs.String())
	}
}

// Replay leaves a running delivery (an attempt under way, or claimed for
// one) as it is and counts it, so the command can say so.
func TestQueue_ReplayCountsRunning(t *testing.T) {
	_, q, events := mustOpenDB(t, "sink")
	ctx := context.Background()
	now := time.Now()
	mustIngest(t, events, "evt_1", now.Add(-time.Minute))
	mustIngest(t, events, "evt_2", now.Add(-time.Minute))
	if jobs, err := q.Claim(ctx, 1, time.Minute, now); err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	r, err := q.Replay(ctx, queue.ReplaySelector{Since: now.Add(-time.Hour)}, now)
	if err != nil {
		t.Fatal(err)
	}
	if r.Queued != 1 || r.Running != 1 || r.Swept != 0 {
		t.Errorf("replay = %+v, want 1 queued again and 1 left running", r)
	}
}

// A replay bigger than one write queues every selected delivery again, in
// several short writes (a running serve's writer waits for each, never for
// the whole replay).
func TestQueue_ReplayManyInBatches(t *testing.T) {
	db, q, events := mustOpenDB(t, "sink")
	ctx := context.Background()
	now := time.Now()
	const n = 1201 // over two batches of 500 and a remainder
	if err := db.Write(ctx, func(tx *sql.Tx) error {
		for i := range n {
			if _, err := events.IngestTx(ctx, tx, &dedupe.Event{Source: "shop", EventID: fmt.Sprintf("e%d", i),
				ReceivedAt: now.Add(-time.Minute), Body: []byte(`{}`)}); err != nil {
				return err
			}
		}
		_, err := tx.Exec(`UPDATE deliveries SET status = 'done', attempts = 1, done_at = 1`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	before := db.Stats().Commits
	r, err := q.Replay(ctx, queue.ReplaySelector{Since: now.Add(-time.Hour)}, now)
	if err != nil {
		t.Fatal(err)
	}
	if r.Queued != n {
		t.Errorf("replay queued %d, want %d", r.Queued, n)
	}
	if commits := db.Stats().Commits - before; commits < 3 {
		t.Errorf("replay of %d deliveries took %d commit(s), want one a batch of 500 (3)", n, commits)
	}
	var pending int
	if err := db.Reader().QueryRow(`SELECT count(*) FROM deliveries WHERE status = 'pending' AND attempts = 0`).Scan(&pending); err != nil || pending != n {
		t.Errorf("%d deliveries pending with attempts reset (err %v), want %d", pending, err, n)
	}
}

// Replay reads its selection, then writes: what changes in between (a
// running serve claims a delivery, or revives a dead one and finishes it)
// is left as it is and counted, never queued again to run a second time.
func TestQueue_ReplayChecksAgainWhenItWrites(t *testing.T) {
	for _, c := range []struct {
		name   string
		sel    queue.ReplaySelector
		meant  string // what the serve does between the read and the write
		status string // the delivery's status after the replay
	}{
		{"Dead delivery revived and done", queue.ReplaySelector{DeadOnly: true},
			`UPDATE deliveries SET status = 'done', attempts = 1, done_at = 1`, "done"},
		{"Delivery claimed", queue.ReplaySelector{Since: time.Now().Add(-time.Hour)},
			`UPDATE deliveries SET status = 'running', attempts = 1, lease_token = 7`, "running"},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, q, _ := deadWithAlert(t)
			ctx := context.Background()
			// Hold the writer: the replay's read goes ahead, its write waits.
			taken, release, held := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			go func() {
				held <- db.Write(ctx, func(tx *sql.Tx) error {
					close(taken)
					<-release
					_, err := tx.Exec(c.meant)
					return err
				})
			}()
			<-taken
			done := make(chan queue.Replayed, 1)
			go func() {
				r, err := q.Replay(ctx, c.sel, time.Now())
				if err != nil {
					t.Error(err)
				}
				done <- r
			}()
			time.Sleep(500 * time.Millisecond) // the read is done (milliseconds); the write waits for the writer
			close(release)
			if err := <-held; err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.Queued != 0 || r.Changed != 1 {
				t.Errorf("replay = %+v, want nothing queued and the delivery counted as changed", r)
			}
			var status string
			if err := db.Reader().QueryRow(`SELECT status FROM deliveries`).Scan(&status); err != nil || status != c.status {
				t.Errorf("delivery now %q (err %v), want %q: left as the serve made it", status, err, c.status)
			}
		})
	}
}
