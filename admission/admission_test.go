package admission_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/admission"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestBudget_MaxQueued(t *testing.T) {
	var waiting, reads atomic.Int64
	b := &admission.Budget{
		MaxQueued: 100,
		Waiting: func(context.Context) (int64, error) {
			reads.Add(1)
			return waiting.Load(), nil
		},
		Interval: 5 * time.Millisecond,
		Logger:   zerolog.Nop(),
	}
	b.Start(context.Background())
	defer b.Stop()
	if err := b.Admit(); err != nil {
		t.Fatalf("empty queue: %v, want admitted", err)
	}
	waiting.Store(100)
	time.Sleep(20 * time.Millisecond)
	if err := b.Admit(); err != nil {
		t.Fatalf("100 waiting of 100: %v, want admitted (the budget is exceeded above it)", err)
	}
	waiting.Store(101)
	waitFor(t, "the verdict to turn", func() bool { return b.Admit() != nil })
	var e *admission.Exceeded
	if err := b.Admit(); !errors.As(err, &e) || e.Key != "store.max_queued" || !strings.Contains(err.Error(), "101 deliveries waiting") {
		t.Errorf("verdict %v, want an *Exceeded naming store.max_queued and 101 waiting", err)
	}
	// Admit never reads: a million of them cost no count.
	before := reads.Load()
	for range 1_000_000 {
		_ = b.Admit()
	}
	if got := reads.Load() - before; got > 1000 {
		t.Errorf("%d reads during a million Admit calls: Admit must read the cached verdict", got)
	}
	waiting.Store(3)
	waitFor(t, "admission to resume", func() bool { return b.Admit() == nil })
}

// A count that fails keeps the verdict it had.
func TestBudget_ReadError(t *testing.T) {
	var fail atomic.Bool
	var waiting atomic.Int64
	waiting.Store(500)
	b := &admission.Budget{
		MaxQueued: 100,
		Waiting: func(context.Context) (int64, error) {
			if fail.Load() {
				return 0, errors.New("disk I/O error")
			}
			return waiting.Load(), nil
		},
		Interval: 5 * time.Millisecond,
		Logger:   zerolog.Nop(),
	}
	b.Start(context.Background())
	defer b.Stop()
	if b.Admit() == nil {
		t.Fatal("500 waiting of 100 admitted")
	}
	fail.Store(true)
	time.Sleep(30 * time.Millisecond)
	if b.Admit() == nil {
		t.Error("a failed count lifted the verdict")
	}
}

func TestBudget_MinFreeDisk(t *testing.T) {
	var free atomic.Uint64
	free.Store(1 << 20)
	b := &admission.Budget{
		MinFreeDisk: 2 << 20,
		Dir:         t.TempDir(),
		FreeDisk:    func(string) (uint64, error) { return free.Load(), nil },
		Interval:    5 * time.Millisecond,
		Logger:      zerolog.Nop(),
	}
	b.Start(context.Background())
	defer b.Stop()
	var e *admission.Exceeded
	if err := b.Admit(); !errors.As(err, &e) || e.Key != "store.min_free_disk" || e.Have != "1.0 MiB" || e.Want != "2.0 MiB" {
		t.Fatalf("1 MiB free of 2 MiB asked: %v, want an *Exceeded naming store.min_free_disk", err)
	}
	free.Store(3 << 20)
	waitFor(t, "admission to resume", func() bool { return b.Admit() == nil })
}

// The real statfs reads this file system's free space.
func TestBudget_Statfs(t *testing.T) {
	b := &admission.Budget{MinFreeDisk: 1, Dir: t.TempDir(), Interval: time.Hour, Logger: zerolog.Nop()}
	b.Start(context.Background())
	defer b.Stop()
	if err := b.Admit(); err != nil {
		t.Errorf("1 byte asked of the temp dir's file system: %v", err)
	}
	b2 := &admission.Budget{MinFreeDisk: 1 << 62, Dir: t.TempDir(), Interval: time.Hour, Logger: zerolog.Nop()}
	b2.Start(context.Background())
	defer b2.Stop()
	if err := b2.Admit(); err == nil {
		t.Error("4 EiB asked of the temp dir's file system: admitted")
	}
}
