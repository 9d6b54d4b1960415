package health_test

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/dedupe"
	"hookbox/health"
	"hookbox/queue"
	"hookbox/sqlite"
)

// notifier keeps what it was asked to send.
type notifier struct {
	mu     sync.Mutex
	alerts []queue.Alert
}

func (n *notifier) Notify(_ context.Context, a queue.Alert) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.alerts = append(n.alerts, a)
	return nil
}

func (n *notifier) sent() []queue.Alert {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]queue.Alert(nil), n.alerts...)
}

func mustOpen(tb testing.TB) *sqlite.DB {
	tb.Helper()
	db, err := sqlite.Open(filepath.Join(tb.TempDir(), "hookbox.db"), sqlite.Options{Logger: zerolog.Nop()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Only the leader checks and sends: a replica without the lease leaves the
// alarms alone, and takes over where the store says they are.
func TestMonitor_OnlyTheLeader(t *testing.T) {
	db := mustOpen(t)
	t0 := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	var now atomic.Int64
	now.Store(t0.UnixMilli())
	clock := func() time.Time { return time.UnixMilli(now.Load()).UTC() }
	var leading atomic.Bool
	n := &notifier{}
	m := health.New(db, n, health.Config{
		Sources:  []health.Source{{Name: "stripe", Silence: time.Hour}},
		Interval: 10 * time.Millisecond,
		Leader:   func(context.Context) bool { return leading.Load() },
		Now:      clock,
		Logger:   zerolog.Nop(),
	})
	m.Start(context.Background())
	defer m.Stop()

	now.Store(t0.Add(2 * time.Hour).UnixMilli())
	time.Sleep(100 * time.Millisecond)
	if alarms, err := db.Alarms(context.Background()); err != nil || len(alarms) != 0 || len(n.sent()) != 0 {
		t.Fatalf("without the lease: alarms %+v (%v), sent %+v; want nothing", alarms, err, n.sent())
	}
	st, err := m.Status(context.Background())
	if err != nil || len(st.Alarms) != 1 || st.Alarms[0].Firing || st.Alarms[0].Value != 7200 {
		t.Fatalf("status without the lease %+v, %v; want stripe's silence at 7200 s, not fired", st.Alarms, err)
	}
	if f, err := m.Firing(context.Background()); err != nil || f[health.Silence] || len(f) != 1 {
		t.Fatalf("firing %v, %v; want silence alone listed (the others are off), not firing", f, err)
	}

	leading.Store(true)
	waitFor(t, "the alert", func() bool { return len(n.sent()) == 1 })
	a := n.sent()[0]
	if a.Kind != health.Silence || a.State != queue.Firing || a.Source != "stripe" || a.Alarm == nil || a.Alarm.Value != 7200 || !a.Alarm.Since.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("alert %+v (%+v), want stripe's silence firing at 7200 s since t0+2h", a, a.Alarm)
	}
	if f, _ := m.Firing(context.Background()); !f[health.Silence] {
		t.Errorf("firing %v, want silence", f)
	}
	time.Sleep(50 * time.Millisecond)
	if got := len(n.sent()); got != 1 {
		t.Errorf("sent %d alerts while it holds, want 1", got)
	}
}

// The status names when each source last sent, a source without silence
// too (from the window's counts): the health page's "last event".
func TestMonitor_StatusLastEvent(t *testing.T) {
	db := mustOpen(t)
	t0 := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	at := t0.Add(-time.Minute)
	if _, err := db.IngestEvent(context.Background(), &dedupe.Event{Source: "github", EventID: "d1", ReceivedAt: at, Body: []byte("{}")}, nil); err != nil {
		t.Fatal(err)
	}
	m := health.New(db, &notifier{}, health.Config{
		Sources: []health.Source{{Name: "github"}, {Name: "stripe"}},
		Now:     func() time.Time { return t0 },
		Logger:  zerolog.Nop(),
	})
	st, err := m.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*time.Time{}
	for _, s := range st.Sources {
		got[s.Name] = s.LastEvent
	}
	if l := got["github"]; l == nil || !l.Equal(at) {
		t.Errorf("github's last event %v, want %v", l, at)
	}
	if l, ok := got["stripe"]; !ok || l != nil {
		t.Errorf("stripe (nothing sent): listed %v, last event %v; want listed with none", ok, l)
	}
}
