package leader_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/leader"
)

// fakeStore answers Lead with what lead returns, and records resignations.
type fakeStore struct {
	mu       sync.Mutex
	lead     func() (bool, error)
	resigned []string
}

func (f *fakeStore) Lead(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lead()
}

func (f *fakeStore) Resign(ctx context.Context, name, holder string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resigned = append(f.resigned, name)
	return nil
}

func (f *fakeStore) set(lead func() (bool, error)) {
	f.mu.Lock()
	f.lead = lead
	f.mu.Unlock()
}

// runWork runs e.Run for "sweeper" and reports when the work starts and
// ends.
func runWork(t *testing.T, e *leader.Elector) (started, ended chan struct{}, cancel func()) {
	t.Helper()
	started, ended = make(chan struct{}, 10), make(chan struct{}, 10)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Run(ctx, "sweeper", func(ctx context.Context) {
			started <- struct{}{}
			<-ctx.Done()
			ended <- struct{}{}
		})
	}()
	cancel = func() { stop(); <-done }
	t.Cleanup(cancel)
	return started, ended, cancel
}

func wait(t *testing.T, c chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s within 10s", what)
	}
}

// Without a lease store (SQLite: one serve per store) the work runs at
// once, and this serve leads.
func TestElector_NoStoreAlwaysLeads(t *testing.T) {
	e := &leader.Elector{Holder: "only", Logger: zerolog.Nop()}
	started, ended, cancel := runWork(t, e)
	wait(t, started, "start of the work")
	if !e.Leader("sweeper") {
		t.Fatal("Leader = false while the work runs")
	}
	cancel()
	wait(t, ended, "end of the work")
	if e.Leader("sweeper") {
		t.Fatal("Leader = true after Run returned")
	}
}

// A lease taken over by another replica stops the work here; it starts
// again once the lease is back; stopping gives it up.
func TestElector_LostLeaseStopsWork(t *testing.T) {
	f := &fakeStore{lead: func() (bool, error) { return true, nil }}
	e := &leader.Elector{Store: f, Holder: "a", TTL: 300 * time.Millisecond, Logger: zerolog.Nop()}
	started, ended, cancel := runWork(t, e)
	wait(t, started, "start of the work")
	f.set(func() (bool, error) { return false, nil })
	wait(t, ended, "end of the work after the lease was taken over")
	if e.Leader("sweeper") {
		t.Fatal("Leader = true after the lease was lost")
	}
	f.set(func() (bool, error) { return true, nil })
	wait(t, started, "start of the work once the lease is back")
	cancel()
	wait(t, ended, "end of the work at stop")
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.resigned) != 1 || f.resigned[0] != "sweeper" {
		t.Fatalf("resigned %v, want [sweeper]", f.resigned)
	}
}

// A leader that cannot renew stops the work before its lease can expire,
// and not at the first failure.
func TestElector_RenewalFailuresStopWorkInTime(t *testing.T) {
	const ttl = 600 * time.Millisecond
	f := &fakeStore{lead: func() (bool, error) { return true, nil }}
	e := &leader.Elector{Store: f, Holder: "a", TTL: ttl, Logger: zerolog.Nop()}
	started, ended, _ := runWork(t, e)
	wait(t, started, "start of the work")
	var renewed time.Time
	f.set(func() (bool, error) {
		if renewed.IsZero() {
			renewed = time.Now() // the last renewal that went through
			return true, nil
		}
		return false, errors.New("connection refused")
	})
	wait(t, ended, "end of the work while renewals fail")
	f.mu.Lock()
	at := renewed
	f.mu.Unlock()
	if took := time.Since(at); took > ttl {
		t.Fatalf("work stopped %v after the last renewal, want within the lease (%v)", took, ttl)
	}
}
