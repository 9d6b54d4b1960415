package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/postgres"
)

// A replica hears what the others announce; when its listening connection
// is cut, it says so, connects again, says that too and catches up (Due),
// and hears the announcements made after.
func TestListen_Reconnects(t *testing.T) {
	u := freshSchema(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := open(t, u, postgres.Options{Logger: zerolog.Nop()})
	b := open(t, u, postgres.Options{Logger: zerolog.Nop()})
	var mu sync.Mutex
	var ups []bool
	due := make(chan struct{}, 100)
	leader := make(chan string, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Listen(ctx, postgres.Listener{
			Due:    func() { due <- struct{}{} },
			Leader: func(name string) { leader <- name },
			Up: func(up bool) {
				mu.Lock()
				ups = append(ups, up)
				mu.Unlock()
			},
		})
	}()
	upCount := func(want bool) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, u := range ups {
			if u == want {
				n++
			}
		}
		return n
	}
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 15s", what)
			}
		}
	}
	heard := func(what string) {
		t.Helper()
		deadline := time.After(15 * time.Second)
		for {
			b.Wake()
			select {
			case <-due:
				return
			case <-time.After(50 * time.Millisecond):
			case <-deadline:
				t.Fatalf("%s: no wake-up heard within 15s", what)
			}
		}
	}
	waitUntil("listening", func() bool { return upCount(true) == 1 })
	for len(due) > 0 {
		<-due // the catch-up at connect
	}
	heard("another replica's Wake")

	if ok, err := b.Lead(ctx, "sweeper", "b", time.Minute); !ok || err != nil {
		t.Fatalf("lead: %v, %v", ok, err)
	}
	if err := b.Resign(ctx, "sweeper", "b"); err != nil {
		t.Fatal(err)
	}
	select {
	case name := <-leader:
		if name != "sweeper" {
			t.Fatalf("lease given up: heard %q, want sweeper", name)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("a lease given up was not heard")
	}

	// Cut the listening connection from the server's side.
	if n, err := b.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = 'hookbox listener' AND query LIKE '%' || current_schema() || '%'`); err != nil || n != 1 {
		t.Fatalf("terminate the listener: %d rows, %v; want 1", n, err)
	}
	waitUntil("down, then up again", func() bool { return upCount(false) >= 1 && upCount(true) >= 2 })
	heard("a Wake after the reconnect")
	cancel()
	<-done
}
