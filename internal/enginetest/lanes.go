package enginetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"hookbox/dedupe"
	"hookbox/order"
	"hookbox/queue"
)

var laneTests = []test{
	{"A pause holds a lane and the resume goes on in order", testLanePause},
	{"Deliveries that arrive under a pause keep their lane's order", testLanePausedArrivals},
	{"FIFO runs one at a time in version order", testLaneFIFO},
	{"Lanes run in parallel; a stuck lane holds only itself", testLaneStuck},
	{"A dead head lets its lane go on", testLaneDeadHead},
	{"Latest skips stale", testLaneLatest},
	{"Coalesce runs the newest", testLaneCoalesce},
	{"Coalesce wait holds a fresh head, at most ten times", testLaneCoalesceWait},
	{"Replay runs a skipped delivery", testLaneReplaySkipped},
	{"Redelivery revives a dead head into its lane", testLaneRevive},
	{"Crash and lease expiry keep one running", testLaneCrash},
	{"Missing and unreadable versions keep receipt order", testLaneMissingVersion},
	{"A target no longer ordered is released", testLaneRelease},
	{"Listing, position and stats", testLaneListing},
	{"Backfill enters lanes", testLaneBackfill},
	{"A failing head gives way to an earlier one", testLaneGiveWay},
	{"A completion hands the next delivery over", testLaneHandOff},
	{"A fifo lane records what was delivered, not what died", testLaneFIFOLast},
	{"A completion that is not its lane's head leaves the lane alone", testLaneNotHead},
}

// laneEvent is a new event of resource key at version, received at at.
func laneEvent(id, key, version string, at time.Time) *dedupe.Event {
	ev := event(id)
	ev.ReceivedAt = at
	ev.OrderKey, ev.OrderVersion = key, version
	ev.OrderRank, _ = order.Rank(version)
	return ev
}

// ingestLane stores a new keyed event queued for targets and returns its
// row id.
func ingestLane(tb testing.TB, e Engine, id, key, version string, at time.Time, targets ...string) int64 {
	tb.Helper()
	res, err := e.IngestEvent(context.Background(), laneEvent(id, key, version, at), targets)
	if err != nil {
		tb.Fatal(err)
	}
	if res.Duplicate {
		tb.Fatalf("event %s: duplicate, want new", id)
	}
	return res.ID
}

// claimedEvents claims what is due at now and returns the events claimed,
// in claim order, sorted.
func claimedEvents(tb testing.TB, e Engine, now time.Time) ([]*queue.Job, []int64) {
	tb.Helper()
	jobs := claim(tb, e, 100, now)
	evs := make([]int64, len(jobs))
	for i, j := range jobs {
		evs[i] = j.Event
	}
	slices.Sort(evs)
	return jobs, evs
}

func deliveryTo(tb testing.TB, e Engine, event int64, target string) queue.Delivery {
	tb.Helper()
	for _, d := range deliveries(tb, e, event) {
		if d.Target == target {
			return d
		}
	}
	tb.Fatalf("event %d has no delivery to %s", event, target)
	return queue.Delivery{}
}

func wantStatus(tb testing.TB, e Engine, event int64, target, status, reasonPrefix string) queue.Delivery {
	tb.Helper()
	d := deliveryTo(tb, e, event, target)
	if d.Status != status || !strings.HasPrefix(d.SkipReason, reasonPrefix) {
		tb.Fatalf("event %d to %s: status %q reason %q, want %q reason %q…", event, target, d.Status, d.SkipReason, status, reasonPrefix)
	}
	return d
}

func fifo(targets ...string) map[string]order.Lane {
	m := map[string]order.Lane{}
	for _, t := range targets {
		m[t] = order.Lane{Mode: order.FIFO}
	}
	return m
}

// Within a lane, one delivery at a time in version order, whatever the
// arrival order; an unordered target of the same events runs them all at
// once. Each completion that makes the next one due says so (Promoted).
func testLaneFIFO(t *testing.T, e Engine) {
	e.SetOrder(fifo("ordered"))
	v3 := ingestLane(t, e, "evt_3", "pi_1", "3", t0, "ordered", "plain")
	v1 := ingestLane(t, e, "evt_1", "pi_1", "1", t0, "ordered", "plain")
	v2 := ingestLane(t, e, "evt_2", "pi_1", "2", t0, "ordered", "plain")

	now := t0.Add(time.Second)
	jobs := claim(t, e, 100, now)
	var ordered []*queue.Job
	plain := 0
	for _, j := range jobs {
		if j.Target == "ordered" {
			ordered = append(ordered, j)
		} else {
			plain++
		}
	}
	if plain != 3 || len(ordered) != 1 {
		t.Fatalf("claimed %d plain and %d ordered deliveries, want 3 and 1", plain, len(ordered))
	}
	for i, want := range []int64{v1, v2, v3} {
		j := ordered[0]
		if j.Event != want {
			t.Fatalf("turn %d: claimed event %d, want %d (versions 1, 2, 3)", i, j.Event, want)
		}
		if j.Lane != "pi_1" {
			t.Fatalf("job lane %q, want pi_1", j.Lane)
		}
		if again := claim(t, e, 100, now); len(again) != 0 {
			t.Fatalf("turn %d: a second delivery of the lane was claimed while one runs (event %d)", i, again[0].Event)
		}
		complete(t, e, j, finishOK(j, now), now)
		if want != v3 && !j.Promoted {
			t.Fatalf("turn %d: completion did not report the next delivery due", i)
		}
		if want == v3 {
			if j.Promoted {
				t.Fatal("last completion reported a promotion, with nothing waiting")
			}
			break
		}
		ordered = claim(t, e, 100, now)
		if len(ordered) != 1 {
			t.Fatalf("turn %d: %d claimed after completion, want 1", i, len(ordered))
		}
	}
	for _, ev := range []int64{v1, v2, v3} {
		wantStatus(t, e, ev, "ordered", queue.Done, "")
	}
}

// A lane whose head keeps failing holds only its own deliveries; another
// lane of the same target goes on.
func testLaneStuck(t *testing.T, e Engine) {
	e.SetOrder(fifo("t"))
	a1 := ingestLane(t, e, "a1", "A", "1", t0, "t")
	a2 := ingestLane(t, e, "a2", "A", "2", t0, "t")
	b1 := ingestLane(t, e, "b1", "B", "1", t0, "t")
	b2 := ingestLane(t, e, "b2", "B", "2", t0, "t")

	now := t0.Add(time.Second)
	jobs, evs := claimedEvents(t, e, now)
	if !slices.Equal(evs, []int64{a1, b1}) {
		t.Fatalf("claimed events %v, want the heads %v", evs, []int64{a1, b1})
	}
	for _, j := range jobs {
		if j.Event == a1 {
			complete(t, e, j, finishFailed(j, now, now.Add(time.Hour), "503"), now)
		} else {
			complete(t, e, j, finishOK(j, now), now)
		}
	}
	_, evs = claimedEvents(t, e, now.Add(time.Second))
	if !slices.Equal(evs, []int64{b2}) {
		t.Fatalf("after lane A's head failed: claimed %v, want only lane B's next %v", evs, []int64{b2})
	}
	wantStatus(t, e, a2, "t", queue.Pending, "")
	if d := deliveryTo(t, e, a2, "t"); !d.Waiting {
		t.Fatal("a2 is not waiting behind its failing head")
	}
	blocked, err := e.Lanes(context.Background(), queue.LaneFilter{Blocked: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(blocked) != 1 || blocked[0].Key != "A" || !blocked[0].BlockedSince.Equal(now) || blocked[0].Queued != 1 {
		t.Fatalf("blocked lanes %+v, want A blocked since %v with 1 queued", blocked, now)
	}
	st, err := e.LaneStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Blocked != 1 || !st.OldestBlocked.Equal(now) {
		t.Fatalf("lane stats %+v, want 1 blocked since %v", st, now)
	}
}

func testLaneDeadHead(t *testing.T, e Engine) {
	e.SetOrder(fifo("t"))
	h := ingestLane(t, e, "h", "A", "1", t0, "t")
	next := ingestLane(t, e, "n", "A", "2", t0, "t")
	j := claimOne(t, e, t0)
	if j.Event != h {
		t.Fatalf("claimed %d, want head %d", j.Event, h)
	}
	complete(t, e, j, finishDead(j, t0, "410", "permanent: status 410", false), t0)
	if !j.Promoted {
		t.Fatal("a dead head did not promote the next")
	}
	if j := claimOne(t, e, t0); j.Event != next {
		t.Fatalf("after the dead head: claimed %d, want %d", j.Event, next)
	}
	if len(deadLetters(t, e)) != 1 {
		t.Fatal("the dead head left no dead letter")
	}
}

func deadLetters(tb testing.TB, e Engine) []queue.DeadLetter {
	tb.Helper()
	l, err := e.DeadLetters(context.Background(), true, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// latest: an older version that arrives after a newer one was delivered
// is skipped at once, and one that waited behind a newer head is skipped
// once the newer is delivered; each names the version delivered.
func testLaneLatest(t *testing.T, e Engine) {
	e.SetOrder(map[string]order.Lane{"t": {Mode: order.Latest}})
	refunded := ingestLane(t, e, "evt_refunded", "pi_1", "1700000002", t0, "t")
	j := claimOne(t, e, t0)
	approved := ingestLane(t, e, "evt_approved", "pi_1", "1700000001", t0, "t")
	if d := deliveryTo(t, e, approved, "t"); !d.Waiting {
		t.Fatalf("approved arrived while refunded runs: %+v, want waiting", d)
	}
	complete(t, e, j, finishOK(j, t0), t0)
	d := wantStatus(t, e, approved, "t", queue.Skipped, "stale")
	if !strings.Contains(d.SkipReason, "1700000002") || !strings.Contains(d.SkipReason, fmt.Sprintf("#%d", refunded)) {
		t.Fatalf("reason %q does not name version 1700000002 and event #%d", d.SkipReason, refunded)
	}
	if jobs := claim(t, e, 10, t0); len(jobs) != 0 {
		t.Fatalf("claimed event %d after refunded was delivered, want nothing", jobs[0].Event)
	}
	// Resent later by the provider (a new event id), older still: skipped
	// as it arrives. Equal versions are not newer either.
	late := ingestLane(t, e, "evt_approved_again", "pi_1", "1700000001", t0, "t")
	wantStatus(t, e, late, "t", queue.Skipped, "stale")
	same := ingestLane(t, e, "evt_refunded_copy", "pi_1", "1700000002", t0, "t")
	wantStatus(t, e, same, "t", queue.Skipped, "stale")
	newer := ingestLane(t, e, "evt_closed", "pi_1", "1700000003", t0, "t")
	if j := claimOne(t, e, t0); j.Event != newer {
		t.Fatalf("claimed %d, want the newer %d", j.Event, newer)
	}
	st, err := e.LaneStats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Skipped[queue.ReasonStale] != 3 {
		t.Fatalf("skipped stale = %d, want 3", st.Skipped[queue.ReasonStale])
	}
}

// coalesce: of several waiting, only the newest runs; the others are
// superseded by it.
func testLaneCoalesce(t *testing.T, e Engine) {
	e.SetOrder(map[string]order.Lane{"t": {Mode: order.Coalesce}})
	first := ingestLane(t, e, "e1", "cus_1", "1", t0, "t")
	j := claimOne(t, e, t0)
	if j.Event != first {
		t.Fatalf("claimed %d, want %d", j.Event, first)
	}
	v3 := ingestLane(t, e, "e3", "cus_1", "3", t0, "t")
	v2 := ingestLane(t, e, "e2", "cus_1", "2", t0, "t")
	v4 := ingestLane(t, e, "e4", "cus_1", "4", t0, "t")
	complete(t, e, j, finishOK(j, t0), t0)
	j = claimOne(t, e, t0)
	if j.Event != v4 {
		t.Fatalf("claimed %d after the head, want the newest %d", j.Event, v4)
	}
	for _, ev := range []int64{v2, v3} {
		wantStatus(t, e, ev, "t", queue.Skipped, fmt.Sprintf("superseded by #%d", v4))
	}
	// While a head has not started, a newer one takes its place at once.
	complete(t, e, j, finishOK(j, t0), t0)
	v5 := ingestLane(t, e, "e5", "cus_1", "5", t0, "t")
	v6 := ingestLane(t, e, "e6", "cus_1", "6", t0, "t")
	wantStatus(t, e, v5, "t", queue.Skipped, fmt.Sprintf("superseded by #%d", v6))
	if j := claimOne(t, e, t0); j.Event != v6 {
		t.Fatalf("claimed %d, want %d", j.Event, v6)
	}
}

// A fresh head waits coalesce_wait for newer events; a stream of them
// holds the lane at most ten times that.
func testLaneCoalesceWait(t *testing.T, e Engine) {
	const wait = time.Second
	e.SetOrder(map[string]order.Lane{"t": {Mode: order.Coalesce, Wait: wait}})
	ingestLane(t, e, "w0", "k", "0", t0, "t")
	if jobs := claim(t, e, 10, t0.Add(wait/2)); len(jobs) != 0 {
		t.Fatal("a fresh head ran before coalesce_wait passed")
	}
	var last int64
	for i := 1; i <= 30; i++ {
		at := t0.Add(time.Duration(i) * wait / 2)
		last = ingestLane(t, e, fmt.Sprintf("w%d", i), "k", fmt.Sprint(i), at, "t")
		if jobs := claim(t, e, 10, at); len(jobs) != 0 {
			if at.Sub(t0) < 10*wait {
				t.Fatalf("claimed at %v into the stream, before ten waits", at.Sub(t0))
			}
			if jobs[0].Event != last {
				t.Fatalf("claimed %d, want the newest %d", jobs[0].Event, last)
			}
			return
		}
		if at.Sub(t0) > 10*wait {
			t.Fatalf("nothing claimable %v into a stream of updates, want the head due by 10×coalesce_wait (%v)", at.Sub(t0), 10*wait)
		}
	}
	t.Fatal("the stream never let a head run")
}

// Replaying a skipped delivery runs it, in its lane's turn.
func testLaneReplaySkipped(t *testing.T, e Engine) {
	ctx := context.Background()
	e.SetOrder(map[string]order.Lane{"t": {Mode: order.Latest}})
	ingestLane(t, e, "new", "k", "2", t0, "t")
	j := claimOne(t, e, t0)
	complete(t, e, j, finishOK(j, t0), t0)
	old := ingestLane(t, e, "old", "k", "1", t0, "t")
	wantStatus(t, e, old, "t", queue.Skipped, "stale")

	r, err := e.Replay(ctx, queue.ReplaySelector{Event: old}, t0)
	if err != nil || r.Queued != 1 {
		t.Fatalf("replay: %+v, %v; want 1 queued", r, err)
	}
	d := wantStatus(t, e, old, "t", queue.Pending, "")
	if d.SkipReason != "" {
		t.Fatalf("replayed delivery keeps reason %q", d.SkipReason)
	}
	j = claimOne(t, e, t0)
	if j.Event != old {
		t.Fatalf("claimed %d, want the replayed %d", j.Event, old)
	}
	complete(t, e, j, finishOK(j, t0), t0)
	wantStatus(t, e, old, "t", queue.Done, "")

	// A replay of a delivery while its lane's head runs waits its turn.
	other := ingestLane(t, e, "other", "k", "3", t0, "t")
	j = claimOne(t, e, t0)
	if j.Event != other {
		t.Fatalf("claimed %d, want %d", j.Event, other)
	}
	if _, err := e.Replay(ctx, queue.ReplaySelector{Event: old}, t0); err != nil {
		t.Fatal(err)
	}
	if jobs := claim(t, e, 10, t0); len(jobs) != 0 {
		t.Fatalf("a replayed delivery ran beside its lane's running head (event %d)", jobs[0].Event)
	}
	complete(t, e, j, finishOK(j, t0), t0)
	if j := claimOne(t, e, t0); j.Event != old {
		t.Fatalf("claimed %d, want the replayed %d", j.Event, old)
	}
}

// A redelivery of an event whose delivery went dead puts it back in its
// lane, behind a running head.
func testLaneRevive(t *testing.T, e Engine) {
	ctx := context.Background()
	e.SetOrder(fifo("t"))
	first := ingestLane(t, e, "first", "k", "1", t0, "t")
	second := ingestLane(t, e, "second", "k", "2", t0, "t")
	j := claimOne(t, e, t0)
	complete(t, e, j, finishDead(j, t0, "boom", "permanent: exit 65", false), t0)
	j = claimOne(t, e, t0)
	if j.Event != second {
		t.Fatalf("claimed %d, want %d", j.Event, second)
	}
	res, err := e.IngestEvent(ctx, laneEvent("first", "k", "1", t0), []string{"t"})
	if err != nil || res.Revived != 1 {
		t.Fatalf("redelivery: %+v, %v; want 1 revived", res, err)
	}
	if jobs := claim(t, e, 10, t0); len(jobs) != 0 {
		t.Fatalf("the revived delivery ran beside its lane's running head (event %d)", jobs[0].Event)
	}
	complete(t, e, j, finishOK(j, t0), t0)
	if j := claimOne(t, e, t0); j.Event != first {
		t.Fatalf("claimed %d, want the revived %d", j.Event, first)
	}
}

// A stop during an attempt and a lease that passes both retry the head
// itself; nothing else of its lane becomes due.
func testLaneCrash(t *testing.T, e Engine) {
	ctx := context.Background()
	e.SetOrder(fifo("t"))
	head := ingestLane(t, e, "h", "k", "1", t0, "t")
	ingestLane(t, e, "n", "k", "2", t0, "t")
	claimOne(t, e, t0)
	if _, err := e.Recover(ctx, t0); err != nil {
		t.Fatal(err)
	}
	j := claimOne(t, e, t0)
	if j.Event != head {
		t.Fatalf("after recovery claimed %d, want the head %d", j.Event, head)
	}
	// The lease passes: the head again, alone.
	jobs, err := e.Claim(ctx, 10, time.Minute, t0.Add(2*time.Minute), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].Event != head {
		t.Fatalf("after the lease passed: %d jobs, want only the head", len(jobs))
	}
	// The first claim's completion is fenced and changes nothing.
	if err := e.Complete(ctx, j, finishOK(j, t0), t0); err != queue.ErrStale {
		t.Fatalf("stale completion: %v, want ErrStale", err)
	}
	if got := claim(t, e, 10, t0.Add(2*time.Minute)); len(got) != 0 {
		t.Fatal("a stale completion promoted the next delivery")
	}
}

// Deliveries without a version, or with one that reads as neither a
// number nor a time, keep receipt order among themselves.
func testLaneMissingVersion(t *testing.T, e Engine) {
	e.SetOrder(map[string]order.Lane{"t": {Mode: order.Latest}})
	a := ingestLane(t, e, "a", "k", "", t0, "t")
	b := ingestLane(t, e, "b", "k", "not-a-version", t0, "t")
	c := ingestLane(t, e, "c", "k", "", t0, "t")
	for _, want := range []int64{a, b, c} {
		j := claimOne(t, e, t0)
		if j.Event != want {
			t.Fatalf("claimed %d, want %d (receipt order)", j.Event, want)
		}
		complete(t, e, j, finishOK(j, t0), t0)
	}
	stored, err := e.GetEvent(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if stored.OrderKey != "k" || stored.OrderVersion != "not-a-version" || stored.OrderRank != "" {
		t.Fatalf("stored key %q version %q rank %q, want k, the version as found, no rank", stored.OrderKey, stored.OrderVersion, stored.OrderRank)
	}
}

// A target whose order is set to none (or that is gone) has its waiting
// deliveries released rather than parked for good.
func testLaneRelease(t *testing.T, e Engine) {
	e.SetOrder(fifo("t"))
	ingestLane(t, e, "a", "k", "1", t0, "t")
	ingestLane(t, e, "b", "k", "2", t0, "t")
	ingestLane(t, e, "c", "k", "3", t0, "t")
	e.SetOrder(nil)
	n, err := e.ReleaseLanes(context.Background(), t0)
	if err != nil || n != 2 {
		t.Fatalf("release: %d, %v; want 2", n, err)
	}
	if jobs := claim(t, e, 10, t0); len(jobs) != 3 {
		t.Fatalf("claimed %d, want all 3 once the target is no longer ordered", len(jobs))
	}
}

func testLaneListing(t *testing.T, e Engine) {
	ctx := context.Background()
	e.SetOrder(fifo("t", "u"))
	v1 := ingestLane(t, e, "a", "k", "10", t0, "t", "u")
	v2 := ingestLane(t, e, "b", "k", "20", t0, "t")
	v3 := ingestLane(t, e, "c", "k", "30", t0, "t")
	jobs := claim(t, e, 10, t0) // the heads of t/k and u/k
	if len(jobs) != 2 {
		t.Fatalf("claimed %d, want the two lanes' heads", len(jobs))
	}
	for _, j := range jobs {
		if j.Target == "t" {
			complete(t, e, j, finishOK(j, t0), t0)
		}
	}
	lanes, err := e.Lanes(ctx, queue.LaneFilter{Target: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if len(lanes) != 1 {
		t.Fatalf("lanes of t: %+v, want 1", lanes)
	}
	if l := lanes[0]; l.HeadEvent != v2 || l.Queued != 1 || l.LastVersion != "10" || l.LastEvent != v1 || l.HeadStatus != queue.Pending {
		t.Fatalf("lane %+v, want head event %d pending, 1 queued, last version 10 of event %d", l, v2, v1)
	}
	all, err := e.Lanes(ctx, queue.LaneFilter{})
	if err != nil || len(all) != 2 {
		t.Fatalf("all lanes: %d, %v; want 2", len(all), err)
	}
	page, err := e.Lanes(ctx, queue.LaneFilter{After: [2]string{"t", "k"}, Limit: 10})
	if err != nil || len(page) != 1 || page[0].Target != "u" {
		t.Fatalf("lanes after t/k: %+v, %v; want u's", page, err)
	}
	d3 := deliveryTo(t, e, v3, "t")
	pos, err := e.LanePosition(ctx, d3.ID)
	if err != nil {
		t.Fatal(err)
	}
	if pos != 2 {
		t.Fatalf("position of v3 in its lane: %d, want 2 (behind the head, v2)", pos)
	}
	if pos, err := e.LanePosition(ctx, deliveryTo(t, e, v2, "t").ID); err != nil || pos != 1 {
		t.Fatalf("position of the head: %d, %v; want 1", pos, err)
	}
	if pos, err := e.LanePosition(ctx, deliveryTo(t, e, v1, "t").ID); err != nil || pos != 0 {
		t.Fatalf("position of a delivered one: %d, %v; want 0", pos, err)
	}
	list := mustList(t, e, dedupe.Filter{Key: "k"})
	if len(list) != 3 {
		t.Fatalf("events of key k: %d, want 3", len(list))
	}
	if none := mustList(t, e, dedupe.Filter{Key: "other"}); len(none) != 0 {
		t.Fatalf("events of key other: %d, want 0", len(none))
	}
}

// A backfill to an ordered target queues each event in its lane.
func testLaneBackfill(t *testing.T, e Engine) {
	ctx := context.Background()
	ingestLane(t, e, "a", "k", "2", t0)
	ingestLane(t, e, "b", "k", "1", t0)
	e.SetOrder(fifo("new"))
	r, err := e.Backfill(ctx, queue.BackfillSelector{Target: "new", Matches: func(string, string) bool { return true }}, t0)
	if err != nil || r.Queued != 2 {
		t.Fatalf("backfill: %+v, %v; want 2", r, err)
	}
	jobs := claim(t, e, 10, t0)
	if len(jobs) != 1 {
		t.Fatalf("claimed %d after backfill, want one (the lane's head)", len(jobs))
	}
}

// A delivery that comes before a head whose attempt is running waits; if
// that attempt fails, it takes the head's place, due when the head would
// have been retried.
func testLaneGiveWay(t *testing.T, e Engine) {
	e.SetOrder(fifo("t"))
	newer := ingestLane(t, e, "newer", "k", "2", t0, "t")
	j := claimOne(t, e, t0)
	older := ingestLane(t, e, "older", "k", "1", t0, "t")
	retry := t0.Add(time.Minute)
	complete(t, e, j, finishFailed(j, t0, retry, "503"), t0)
	if jobs := claim(t, e, 10, retry.Add(-time.Millisecond)); len(jobs) != 0 {
		t.Fatal("a delivery ran before the failing head's retry time")
	}
	j = claimOne(t, e, retry)
	if j.Event != older {
		t.Fatalf("claimed %d at the retry time, want the older %d", j.Event, older)
	}
	complete(t, e, j, finishOK(j, retry), retry)
	if j := claimOne(t, e, retry); j.Event != newer {
		t.Fatalf("claimed %d, want %d", j.Event, newer)
	}
}

// A completion given a lease claims the delivery it makes due for its
// caller, with its event: nothing else can claim it.
func testLaneHandOff(t *testing.T, e Engine) {
	e.SetOrder(fifo("t"))
	ingestLane(t, e, "a", "k", "1", t0, "t")
	b := ingestLane(t, e, "b", "k", "2", t0, "t")
	j := claimOne(t, e, t0)
	f := finishOK(j, t0)
	f.Lease = time.Minute
	complete(t, e, j, f, t0)
	next := j.Next
	if next == nil || next.Event != b || next.Lane != "k" || next.Attempt != 1 || string(next.Body) != `{"id":"b"}` {
		t.Fatalf("handed over %+v, want event %d's delivery, attempt 1, with its body", next, b)
	}
	if j.Promoted {
		t.Fatal("a handed-over delivery is reported for a claim too")
	}
	if jobs := claim(t, e, 10, t0); len(jobs) != 0 {
		t.Fatalf("claimed %d, want none: the next one is held", len(jobs))
	}
	if d := deliveryTo(t, e, b, "t"); d.Status != queue.Running {
		t.Fatalf("handed-over delivery is %s, want running", d.Status)
	}
	if l := oneLane(t, e, "t"); l.HeadEvent != b || l.LastVersion != "1" {
		t.Fatalf("lane %+v after the hand-over, want head event %d, last version 1", l, b)
	}
	f = finishOK(next, t0)
	f.Lease = time.Minute
	complete(t, e, next, f, t0)
	if next.Next != nil || next.Promoted {
		t.Fatal("the lane's last completion handed something over")
	}
	wantStatus(t, e, b, "t", queue.Done, "")
	// The handed-over delivery's version is recorded as delivered.
	if l := oneLane(t, e, "t"); l.Head != 0 || l.LastVersion != "2" || l.LastEvent != b {
		t.Fatalf("drained lane %+v, want no head, last version 2 of event %d", l, b)
	}

	// Paused meanwhile, the next one is not handed over: it waits, paused,
	// as the lane's head, and runs after the resume.
	ctx := context.Background()
	ingestLane(t, e, "c", "k", "3", t0, "t")
	d := ingestLane(t, e, "d", "k", "4", t0, "t")
	j = claimOne(t, e, t0)
	if _, err := e.Pause(ctx, "t", t0); err != nil {
		t.Fatal(err)
	}
	f = finishOK(j, t0)
	f.Lease = time.Minute
	complete(t, e, j, f, t0)
	if j.Next != nil {
		t.Fatalf("handed over event %d of a paused target", j.Next.Event)
	}
	if l := oneLane(t, e, "t"); l.HeadEvent != d || l.LastVersion != "3" {
		t.Fatalf("lane %+v under the pause, want head event %d, last version 3", l, d)
	}
	if jobs := claim(t, e, 10, t0.Add(time.Hour)); len(jobs) != 0 {
		t.Fatalf("claimed %d under the pause, want none", len(jobs))
	}
	if _, err := e.Resume(ctx, "t", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if jobs := claim(t, e, 10, t0.Add(time.Hour)); len(jobs) != 1 || jobs[0].Event != d {
		t.Fatalf("claimed %d after the resume, want event %d alone", len(jobs), d)
	}
}

// A pause that lands while a lane's head runs holds the rest of the lane,
// and the resume lets it go on one at a time, in version order: the
// deliveries waiting behind the head are neither lost from the lane nor
// all released at once.
func testLanePause(t *testing.T, e Engine) {
	e.SetOrder(fifo("ordered"))
	v1 := ingestLane(t, e, "evt_p1", "pi_p", "1", t0, "ordered")
	v2 := ingestLane(t, e, "evt_p2", "pi_p", "2", t0, "ordered")
	v3 := ingestLane(t, e, "evt_p3", "pi_p", "3", t0, "ordered")
	ctx := context.Background()
	now := t0.Add(time.Second)
	jobs := claim(t, e, 100, now)
	if len(jobs) != 1 || jobs[0].Event != v1 {
		t.Fatalf("claimed %d jobs, want the head (event %d) alone", len(jobs), v1)
	}
	if _, err := e.Pause(ctx, "ordered", now); err != nil {
		t.Fatal(err)
	}
	// The head finishes under the pause; nothing else of the lane runs.
	complete(t, e, jobs[0], finishOK(jobs[0], now), now)
	// The lane is blocked while its target is paused, since the pause.
	blocked, err := e.Lanes(ctx, queue.LaneFilter{Target: "ordered", Blocked: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(blocked) != 1 || blocked[0].Key != "pi_p" || blocked[0].BlockedSince.IsZero() || blocked[0].Queued != 1 {
		t.Fatalf("blocked lanes under the pause: %+v, want pi_p, blocked since the pause, one waiting behind its head", blocked)
	}
	if st, err := e.LaneStats(ctx); err != nil || st.Blocked != 1 || !st.OldestBlocked.Equal(blocked[0].BlockedSince) {
		t.Fatalf("lane stats under the pause: %+v (%v), want one blocked since the pause", st, err)
	}
	wantStatus(t, e, v1, "ordered", queue.Done, "")
	if got := claim(t, e, 100, now.Add(time.Hour)); len(got) != 0 {
		t.Fatalf("a paused target's delivery was claimed (event %d)", got[0].Event)
	}
	if _, err := e.Resume(ctx, "ordered", now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	later := now.Add(2 * time.Hour)
	for _, want := range []int64{v2, v3} {
		got := claim(t, e, 100, later)
		if len(got) != 1 || got[0].Event != want {
			var evs []int64
			for _, j := range got {
				evs = append(evs, j.Event)
			}
			t.Fatalf("after the resume claimed events %v, want %d alone", evs, want)
		}
		complete(t, e, got[0], finishOK(got[0], later), later)
	}
	for _, ev := range []int64{v2, v3} {
		wantStatus(t, e, ev, "ordered", queue.Done, "")
	}
}

// Deliveries that arrive while their target is paused still enter their
// lanes: fifo runs them after the resume one at a time in version order
// (the one that led the lane when the pause began included), and coalesce
// runs only the newest.
func testLanePausedArrivals(t *testing.T, e Engine) {
	e.SetOrder(map[string]order.Lane{"ff": {Mode: order.FIFO}, "co": {Mode: order.Coalesce}})
	ctx := context.Background()
	now := t0.Add(time.Second)
	for _, target := range []string{"ff", "co"} {
		if _, err := e.Pause(ctx, target, now); err != nil {
			t.Fatal(err)
		}
	}
	v2 := ingestLane(t, e, "evt_v2", "ch_5", "2", now, "ff", "co")
	v3 := ingestLane(t, e, "evt_v3", "ch_5", "3", now, "ff", "co")
	v1 := ingestLane(t, e, "evt_v1", "ch_5", "1", now, "ff", "co")
	if got := claim(t, e, 100, now.Add(time.Hour)); len(got) != 0 {
		t.Fatalf("a paused target's delivery was claimed (event %d)", got[0].Event)
	}
	later := now.Add(2 * time.Hour)
	for _, target := range []string{"ff", "co"} {
		if _, err := e.Resume(ctx, target, later); err != nil {
			t.Fatal(err)
		}
	}
	var ff, co []int64
	for range 10 {
		jobs := claim(t, e, 100, later)
		if len(jobs) == 0 {
			break
		}
		perTarget := map[string]int{}
		for _, j := range jobs {
			perTarget[j.Target]++
			if perTarget[j.Target] > 1 {
				t.Fatalf("two deliveries of lane ch_5 to %s claimed at once", j.Target)
			}
			if j.Target == "ff" {
				ff = append(ff, j.Event)
			} else {
				co = append(co, j.Event)
			}
			complete(t, e, j, finishOK(j, later), later)
		}
	}
	if !slices.Equal(ff, []int64{v1, v2, v3}) {
		t.Errorf("fifo ran events %v after the resume, want %v: version order", ff, []int64{v1, v2, v3})
	}
	if !slices.Equal(co, []int64{v3}) {
		t.Errorf("coalesce ran events %v after the resume, want the newest alone (%d)", co, v3)
	}
	wantStatus(t, e, v2, "co", queue.Skipped, "superseded")
	wantStatus(t, e, v1, "co", queue.Skipped, "")
}

// oneLane returns target's only lane.
func oneLane(tb testing.TB, e Engine, target string) queue.Lane {
	tb.Helper()
	lanes, err := e.Lanes(context.Background(), queue.LaneFilter{Target: target})
	if err != nil {
		tb.Fatal(err)
	}
	if len(lanes) != 1 {
		tb.Fatalf("lanes of %s: %+v, want 1", target, lanes)
	}
	return lanes[0]
}

// A fifo lane's last delivered version and event move with each delivery
// done (the version only where the event has one), not with a dead one;
// the lane's last delivery leaves it without a head.
func testLaneFIFOLast(t *testing.T, e Engine) {
	e.SetOrder(fifo("t"))
	a := ingestLane(t, e, "a", "k", "10", t0, "t")
	first := claimOne(t, e, t0)                  // running: the others wait behind it
	b := ingestLane(t, e, "b", "k", "", t0, "t") // no version: first of those waiting
	c := ingestLane(t, e, "c", "k", "30", t0, "t")
	d := ingestLane(t, e, "d", "k", "40", t0, "t")
	step := func(want int64, f func(*queue.Job) queue.Finish, promoted bool, head int64, last string, lastEvent int64) {
		t.Helper()
		j := first
		if j == nil {
			j = claimOne(t, e, t0)
		}
		first = nil
		if j.Event != want {
			t.Fatalf("claimed event %d, want %d", j.Event, want)
		}
		complete(t, e, j, f(j), t0)
		if j.Promoted != promoted {
			t.Fatalf("event %d: promoted %v, want %v", want, j.Promoted, promoted)
		}
		l := oneLane(t, e, "t")
		if l.HeadEvent != head || l.LastVersion != last || l.LastEvent != lastEvent {
			t.Fatalf("after event %d: lane %+v, want head event %d, last version %q of event %d", want, l, head, last, lastEvent)
		}
	}
	ok := func(j *queue.Job) queue.Finish { return finishOK(j, t0) }
	dead := func(j *queue.Job) queue.Finish { return finishDead(j, t0, "410", "permanent: status 410", false) }
	step(a, ok, true, b, "10", a)
	step(b, ok, true, c, "10", b)
	step(c, dead, true, d, "10", b)
	step(d, ok, false, 0, "40", d)
	if l := oneLane(t, e, "t"); l.Head != 0 || l.Queued != 0 {
		t.Fatalf("drained lane %+v, want no head, none queued", l)
	}
	if jobs := claim(t, e, 10, t0); len(jobs) != 0 {
		t.Fatalf("claimed %d from a drained lane, want 0", len(jobs))
	}
}

// Deliveries released from their lane (its target's order set to none)
// and running when the target is ordered again are not the lane's head:
// their completion neither promotes nor records, and a new head that took
// the lane meanwhile stays.
func testLaneNotHead(t *testing.T, e Engine) {
	ctx := context.Background()
	e.SetOrder(fifo("t"))
	a := ingestLane(t, e, "a", "k", "1", t0, "t")
	ingestLane(t, e, "b", "k", "2", t0, "t")
	e.SetOrder(nil)
	if _, err := e.ReleaseLanes(ctx, t0); err != nil {
		t.Fatal(err)
	}
	jobs := claim(t, e, 10, t0)
	if len(jobs) != 2 {
		t.Fatalf("claimed %d, want both once released", len(jobs))
	}
	e.SetOrder(fifo("t"))
	c := ingestLane(t, e, "c", "k", "3", t0, "t") // the lane had no head: c leads
	for _, j := range jobs {
		complete(t, e, j, finishOK(j, t0), t0)
		if j.Promoted || j.Next != nil {
			t.Fatalf("completion of event %d, not the head, promoted %v, handed over %v", j.Event, j.Promoted, j.Next)
		}
	}
	if l := oneLane(t, e, "t"); l.HeadEvent != c || l.LastEvent != 0 || l.LastVersion != "" {
		t.Fatalf("lane %+v, want head event %d, nothing recorded as delivered (not event %d)", l, c, a)
	}
	if j := claimOne(t, e, t0); j.Event != c {
		t.Fatalf("claimed %d, want the head %d", j.Event, c)
	}
}
