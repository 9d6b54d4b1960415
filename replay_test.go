package main

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/queue"
)

// TestReplay runs `hookbox replay` against the store of a running hookbox,
// as an operator would after fixing a target.
func TestReplay(t *testing.T) {
	var fixed atomic.Bool
	web := newRecordingTarget(t, func(int) int {
		if fixed.Load() {
			return http.StatusOK
		}
		return http.StatusServiceUnavailable
	})
	tm := MustRunMain(t, deadConfig(web.URL, "http://127.0.0.1:1/unused"), "")
	for _, id := range []string{"evt_a", "evt_b"} {
		postEvent(t, tm, id, "order.created", []byte(`{}`), "accepted")
	}
	a, b := eventRow(t, tm, "shop", "evt_a"), eventRow(t, tm, "shop", "evt_b")
	waitStatus(t, tm, a, "web", queue.Dead, 5*time.Second)
	waitStatus(t, tm, b, "web", queue.Dead, 5*time.Second)
	fixed.Store(true)

	t.Run("One event", func(t *testing.T) {
		out := cliRun(t, tm.Dir, "replay", strconv.FormatInt(a, 10))
		if !strings.HasPrefix(out, "1 deliveries queued again") {
			t.Fatalf("replay %d: %q, want 1 delivery queued", a, out)
		}
		d := waitStatus(t, tm, a, "web", queue.Done, 5*time.Second)
		if d.Attempts != 1 {
			t.Errorf("attempts=%d after replay, want 1 (reset)", d.Attempts)
		}
		if got := deliveriesOf(t, tm, b)["web"].Status; got != queue.Dead {
			t.Errorf("the other event's delivery is %s, want still dead", got)
		}
	})
	t.Run("Dead letters", func(t *testing.T) {
		out := cliRun(t, tm.Dir, "replay", "--dead")
		if !strings.HasPrefix(out, "1 deliveries queued again") {
			t.Fatalf("replay --dead: %q, want 1 delivery queued", out)
		}
		waitStatus(t, tm, b, "web", queue.Done, 5*time.Second)
		if out := cliRun(t, tm.Dir, "dead"); strings.Contains(out, "evt_b") {
			t.Errorf("dead still lists evt_b after its replay:\n%s", out)
		}
	})
	t.Run("A period", func(t *testing.T) {
		before := web.Count()
		out := cliRun(t, tm.Dir, "replay", "--since", "1h")
		if !strings.HasPrefix(out, "2 deliveries queued again") {
			t.Fatalf("replay --since 1h: %q, want both deliveries queued", out)
		}
		waitFor(t, 5*time.Second, "both events delivered again", func() bool { return web.Count() == before+2 })
		if out := cliRun(t, tm.Dir, "replay", "--since", time.Now().Add(time.Hour).Format(time.RFC3339)); !strings.HasPrefix(out, "0 deliveries") {
			t.Errorf("replay of a future period: %q, want 0", out)
		}
	})
	t.Run("Needs a selection", func(t *testing.T) {
		_, _, err := runCLI(t, "replay", "--config", storeConfig(t, tm.Dir))
		if err == nil || !strings.Contains(err.Error(), "give an event number, --dead, or --since") {
			t.Fatalf("replay without a selection: %v, want a usage error", err)
		}
	})
}
