package queue_test

import (
	"context"
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
	"hookbox/sqlite"
)

// store is a SQLite store whose new events are queued for its targets:
// the pool and the alerter run on the real engine. The store-level
// behaviours themselves are tested in sqlite and internal/enginetest.
type store struct {
	*sqlite.DB
	targets []string
}

// MustOpen opens a store in a temp dir whose new events are queued for
// targets, closed when the test ends.
func MustOpen(tb testing.TB, targets ...string) *store {
	tb.Helper()
	db, err := sqlite.Open(filepath.Join(tb.TempDir(), "hookbox.db"), sqlite.Options{Logger: zerolog.Nop()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return &store{DB: db, targets: targets}
}

// mustIngest stores a new event and returns its row id.
func mustIngest(tb testing.TB, s *store, id string, at time.Time) int64 {
	tb.Helper()
	res, err := s.IngestEvent(context.Background(), &dedupe.Event{
		Source: "shop", EventID: id, Type: "order.created", ReceivedAt: at, ContentType: "application/json", Body: []byte(`{}`),
	}, s.targets)
	if err != nil {
		tb.Fatal(err)
	}
	if res.Duplicate {
		tb.Fatalf("event %s: duplicate, want new", id)
	}
	return res.ID
}

// exec runs statements on the store's writer: a trigger that refuses a
// write, a row as a sweep leaves it.
func exec(tb testing.TB, s *store, query string, args ...any) {
	tb.Helper()
	if _, err := s.Exec(context.Background(), query, args...); err != nil {
		tb.Fatal(err)
	}
}

func mustDelivery(tb testing.TB, q *store, event int64) queue.Delivery {
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
func waitStatus(tb testing.TB, q *store, event int64, status string) {
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
func waitCount(tb testing.TB, q *store, events []int64, status string, want int, timeout time.Duration) int {
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
	q := MustOpen(t, "slow")
	start := time.Now()
	ev := mustIngest(t, q, "evt_clock", start)
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
	before := q.Stats().Commits
	time.Sleep(300 * time.Millisecond)
	if n := q.Stats().Commits - before; n > 5 {
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
	q := MustOpen(t, "a", "b")
	const n = 25
	var ids []int64
	for i := range n {
		ids = append(ids, mustIngest(t, q, fmt.Sprintf("evt_%d", i), time.Now()))
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
	q := MustOpen(t, "slow")
	ev := mustIngest(t, q, "evt_slow", time.Now())
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
	if jobs, err := q.Claim(context.Background(), 10, 300*time.Millisecond, time.Now(), nil); err != nil || len(jobs) != 0 {
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
	q := MustOpen(t, "slow")
	first := mustIngest(t, q, "evt_1", time.Now().Add(-time.Second))
	second := mustIngest(t, q, "evt_2", time.Now())
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
	if jobs, err := q.Claim(context.Background(), 10, 300*time.Millisecond, time.Now(), nil); err != nil || len(jobs) != 0 {
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
	q := MustOpen(t, "a")
	const n = 10
	var ids []int64
	for i := range n {
		ids = append(ids, mustIngest(t, q, fmt.Sprintf("evt_%d", i), time.Now()))
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

// A delivery whose payload retention removed goes dead at its first
// attempt (with an alert), instead of being retried through every backoff.
// startOneWorker starts a pool of one worker with a single target, 5
// attempts and an hour's backoff (so a second attempt never comes within a
// test), stopped when the test ends.
func startOneWorker(t *testing.T, q *store, target string, h queue.HandlerFunc) {
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
	q := MustOpen(t, "sink")
	ev := mustIngest(t, q, "evt_swept", time.Now())
	exec(t, q, `UPDATE events SET body = NULL, headers = NULL, swept_at = 1 WHERE id = ?`, ev)
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
	q := MustOpen(t, "old-name")
	ev := mustIngest(t, q, "evt_orphan", time.Now())
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
	q := MustOpen(t, "sink")
	ev := mustIngest(t, q, "evt_logged", time.Now())
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

// An idle pool writes nothing (it looks for due work with reads), and still
// finds work added behind its back, as a replay from another process adds
// it, within its once-a-second look.
func TestPool_IdleWritesNothing(t *testing.T) {
	q := MustOpen(t, "sink")
	p := queue.NewPool(q, queue.PoolConfig{
		Workers: 2, MaxAttempts: 1, Lease: time.Minute, Grace: time.Second,
		Targets: []queue.Target{{Name: "sink", Handler: queue.HandlerFunc(func(context.Context, *queue.Job) queue.Outcome { return queue.Outcome{} })}},
		Logger:  zerolog.Nop(),
	})
	start := q.Stats()
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	// Starting writes twice: the recovery of interrupted deliveries and the
	// first claim.
	for deadline := time.Now().Add(5 * time.Second); q.Stats().Writes-start.Writes < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the pool made %d writes starting, want 2", q.Stats().Writes-start.Writes)
		}
	}
	before := q.Stats()
	time.Sleep(1300 * time.Millisecond)
	if w := q.Stats().Writes - before.Writes; w != 0 {
		t.Errorf("an idle pool made %d writes in 1.3 s, want none", w)
	}
	ev := mustIngest(t, q, "evt_behind", time.Now()) // no Notify
	waitStatus(t, q, ev, queue.Done)
}

// A result that cannot be written (a full disk; here a trigger refusing
// it) is written again until it goes in, the delivery held meanwhile: the
// target does not see it a second time when the lease would have passed.
// A pool stopped before the result goes in leaves it running, for the next
// start to run again.
func TestPool_UnwrittenResultIsWrittenAgain(t *testing.T) {
	q := MustOpen(t, "sink")
	refuse := func(on bool) {
		t.Helper()
		stmt := `DROP TRIGGER IF EXISTS refuse_done`
		if on {
			stmt = `CREATE TRIGGER refuse_done BEFORE UPDATE OF status ON deliveries WHEN NEW.status = 'done'
				BEGIN SELECT RAISE(ABORT, 'database or disk is full (simulated)'); END`
		}
		exec(t, q, stmt)
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
	ev := mustIngest(t, q, "evt_full", time.Now())
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
	ev2 := mustIngest(t, q, "evt_full_2", time.Now())
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

// With a long poll, work added behind the pool's back waits for a wake-up;
// while the store's wake-ups from other processes are down (Listening
// false), the pool looks every second again, and finds it.
func TestPool_LooksEverySecondWhileDeaf(t *testing.T) {
	q := MustOpen(t, "sink")
	p := queue.NewPool(q, queue.PoolConfig{
		Workers: 1, MaxAttempts: 1, Lease: time.Minute, Grace: time.Second, Poll: time.Hour,
		Targets: []queue.Target{{Name: "sink", Handler: queue.HandlerFunc(func(context.Context, *queue.Job) queue.Outcome { return queue.Outcome{} })}},
		Logger:  zerolog.Nop(),
	})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	time.Sleep(100 * time.Millisecond)               // the first claim found nothing; the pool waits its hour
	ev := mustIngest(t, q, "evt_behind", time.Now()) // no Notify
	time.Sleep(1500 * time.Millisecond)
	if d := mustDelivery(t, q, ev); d.Status != queue.Pending {
		t.Fatalf("with an hour's poll and no wake-up: %s after 1.5 s, want still pending", d.Status)
	}
	p.Listening(false)
	p.Notify() // as the listener does when it goes down
	waitStatus(t, q, ev, queue.Done)
	ev2 := mustIngest(t, q, "evt_behind_2", time.Now()) // no Notify: found by the look
	waitStatus(t, q, ev2, queue.Done)
}
