package enginetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"hookbox/queue"
)

// Peers is what an engine whose store several serve replicas share
// (PostgreSQL) offers the suite: another replica on the same store. An
// engine without it has one serve per store (SQLite's lock), and the
// cases that need two skip, saying so.
type Peers interface {
	// Peer opens the store again as another replica of this machine:
	// one whose process still runs (alive), or one whose process is
	// provably gone (it ran here and its pid no longer does).
	Peer(t *testing.T, alive bool) Engine
}

var replicaTests = []test{
	{"Recovered delivery's old token is fenced", testRecoveredIsFenced},
	{"Recover leaves a live replica's deliveries", testRecoverLeavesLive},
	{"Recover takes back a gone replica's deliveries", testRecoverTakesGone},
	{"A live replica's expired lease is taken over", testExpiredLeaseTakenOver},
}

func peer(t *testing.T, e Engine, alive bool) Engine {
	t.Helper()
	p, ok := e.(Peers)
	if !ok {
		t.Skip("one serve per store: this engine has no other replica")
	}
	return p.Peer(t, alive)
}

// After Recover, the claim the stopped process held is fenced: its late
// completion changes nothing, and the delivery runs again as a retry.
func testRecoveredIsFenced(t *testing.T, e Engine) {
	ctx := context.Background()
	ev := ingest(t, e, "evt_1", t0, "web")
	old := claimOne(t, e, t0)
	restart := t0.Add(time.Second)
	if n, err := e.Recover(ctx, restart); err != nil || n != 1 {
		t.Fatalf("recover: %d, %v; want 1", n, err)
	}
	if err := e.Complete(ctx, old, finishOK(old, t0), restart); !errors.Is(err, queue.ErrStale) {
		t.Fatalf("complete under the recovered claim: %v, want ErrStale", err)
	}
	if d := delivery(t, e, ev); d.Status != queue.Retrying {
		t.Fatalf("delivery %s after the stale completion, want retrying", d.Status)
	}
	again := claimOne(t, e, restart)
	complete(t, e, again, finishOK(again, restart), restart)
	if d := delivery(t, e, ev); d.Status != queue.Done || d.Attempts != 2 {
		t.Fatalf("delivery %s after %d attempts, want done after 2", d.Status, d.Attempts)
	}
}

// A starting replica's Recover leaves alone what a live replica runs: it
// is neither listed as left running nor made due, and its claim still
// completes.
func testRecoverLeavesLive(t *testing.T, e Engine) {
	ctx := context.Background()
	live := peer(t, e, true)
	ev := ingest(t, e, "evt_1", t0, "web")
	j := claimOne(t, live, t0)
	if keys, err := e.Running(ctx); err != nil || len(keys) != 0 {
		t.Fatalf("running, as the starting replica sees it: %v, %v; want none (the live replica holds it)", keys, err)
	}
	if n, err := e.Recover(ctx, t0.Add(time.Second)); err != nil || n != 0 {
		t.Fatalf("recover: %d, %v; want 0", n, err)
	}
	if d := delivery(t, e, ev); d.Status != queue.Running {
		t.Fatalf("live replica's delivery %s after another's recover, want running", d.Status)
	}
	if jobs := claim(t, e, 10, t0.Add(time.Second)); len(jobs) != 0 {
		t.Fatalf("claim within the live replica's lease: %d jobs, want 0", len(jobs))
	}
	complete(t, live, j, finishOK(j, t0), t0.Add(2*time.Second))
	if d := delivery(t, e, ev); d.Status != queue.Done || d.Attempts != 1 {
		t.Fatalf("delivery %s after %d attempts, want done after 1", d.Status, d.Attempts)
	}
}

// What a replica whose process is gone left running, a replica of its
// machine lists (for its commands, by that replica) and takes back at its
// start, without waiting for the lease; the gone one's claim is fenced.
func testRecoverTakesGone(t *testing.T, e Engine) {
	ctx := context.Background()
	gone := peer(t, e, false)
	ev := ingest(t, e, "evt_1", t0, "cmd")
	j := claimOne(t, gone, t0)
	keys, err := e.Running(ctx)
	if err != nil || len(keys) != 1 || keys[0].EventID != "evt_1" || keys[0].Target != "cmd" || keys[0].Replica == "" {
		t.Fatalf("running: %+v, %v; want evt_1 at cmd, naming the gone replica", keys, err)
	}
	restart := t0.Add(time.Second) // well within the minute's lease
	if n, err := e.Recover(ctx, restart); err != nil || n != 1 {
		t.Fatalf("recover: %d, %v; want 1", n, err)
	}
	if d := delivery(t, e, ev); d.Status != queue.Retrying || !d.RunAt.Equal(restart) {
		t.Fatalf("gone replica's delivery %s due %v after recover, want retrying, due %v", d.Status, d.RunAt, restart)
	}
	if err := gone.Complete(ctx, j, finishOK(j, t0), restart); !errors.Is(err, queue.ErrStale) {
		t.Fatalf("the gone replica's completion: %v, want ErrStale", err)
	}
	if n, err := e.Recover(ctx, restart); err != nil || n != 0 {
		t.Fatalf("recover again: %d, %v; want 0", n, err)
	}
}

// A live replica that holds a delivery past its lease (stuck, cut off from
// the database) loses it to another replica's claim, and its completion
// is fenced.
func testExpiredLeaseTakenOver(t *testing.T, e Engine) {
	ctx := context.Background()
	live := peer(t, e, true)
	ev := ingest(t, e, "evt_1", t0, "web")
	j := claimOne(t, live, t0)
	later := t0.Add(time.Minute + time.Millisecond)
	k := claimOne(t, e, later)
	if k.Delivery != j.Delivery || k.Attempt != 2 {
		t.Fatalf("takeover: delivery %d attempt %d, want %d attempt 2", k.Delivery, k.Attempt, j.Delivery)
	}
	if err := live.Complete(ctx, j, finishOK(j, t0), later); !errors.Is(err, queue.ErrStale) {
		t.Fatalf("the first replica's late completion: %v, want ErrStale", err)
	}
	complete(t, e, k, finishOK(k, later), later)
	if d := delivery(t, e, ev); d.Status != queue.Done {
		t.Fatalf("delivery %s, want done", d.Status)
	}
}
