package live_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/internal/live"
)

func TestMonitor(t *testing.T) {
	var broken atomic.Bool
	var pets atomic.Int64
	m := &live.Monitor{
		Checks: []live.Check{
			{Name: "store", Run: func(ctx context.Context) error {
				if broken.Load() {
					<-ctx.Done() // a wedged writer: no answer until the timeout
					return ctx.Err()
				}
				return nil
			}},
			{Name: "workers", Run: func(context.Context) error { return nil }},
		},
		Interval: 10 * time.Millisecond,
		OnPass:   func() { pets.Add(1) },
		Logger:   zerolog.Nop(),
	}
	m.Start(context.Background())
	defer m.Stop()
	if err := m.Err(); err != nil || pets.Load() < 1 {
		t.Fatalf("after the first round: %v, %d pets; want passing and petted", err, pets.Load())
	}
	broken.Store(true)
	deadline := time.Now().Add(5 * time.Second)
	for m.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	err := m.Err()
	if err == nil || !strings.HasPrefix(err.Error(), "store: ") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wedged store: %v, want store: … deadline exceeded", err)
	}
	// No pet while it fails.
	before := pets.Load()
	time.Sleep(100 * time.Millisecond)
	if got := pets.Load(); got != before {
		t.Errorf("%d pets while the store check failed, want none", got-before)
	}
	broken.Store(false)
	deadline = time.Now().Add(5 * time.Second)
	for (m.Err() != nil || pets.Load() == before) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if m.Err() != nil || pets.Load() == before {
		t.Errorf("after the store recovered: %v, pets %d→%d; want passing and petted again", m.Err(), before, pets.Load())
	}
}
