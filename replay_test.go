package main_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/internal/cli"
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
		if !strings.HasPrefix(out, "1 delivery queued again") {
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
		if !strings.HasPrefix(out, "1 delivery queued again") {
			t.Fatalf("replay --dead: %q, want 1 delivery queued", out)
		}
		waitStatus(t, tm, b, "web", queue.Done, 5*time.Second)
		if out := cliRun(t, tm.Dir, "dead"); strings.Contains(out, "evt_b") {
			t.Errorf("dead still lists evt_b after its replay:\n%s", out)
		}
		// --all lists it, with when it was revived.
		out = cliRun(t, tm.Dir, "dead", "--all")
		if !strings.Contains(out, "REVIVED") || !regexp.MustCompile(`evt_b\s.*\s\d{4}-\d\d-\d\dT\S+Z\n`).MatchString(out) {
			t.Errorf("dead --all:\n%s\nwant evt_b with the time it was revived", out)
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
	t.Run("Swept payloads are left out", func(t *testing.T) {
		waitStatus(t, tm, a, "web", queue.Done, 5*time.Second)
		waitStatus(t, tm, b, "web", queue.Done, 5*time.Second)
		// Retention removes both payloads; an event received afterwards keeps its own.
		if swept, _, err := tm.DB.Sweep(context.Background(), time.Now().Add(time.Minute), time.Time{}, 100); err != nil || swept != 2 {
			t.Fatalf("sweep: %d swept, %v; want 2", swept, err)
		}
		postEvent(t, tm, "evt_c", "order.created", []byte(`{}`), "accepted")
		c := eventRow(t, tm, "shop", "evt_c")
		waitStatus(t, tm, c, "web", queue.Done, 5*time.Second)
		before := web.Count()
		out := cliRun(t, tm.Dir, "replay", "--since", "1h")
		if !strings.HasPrefix(out, "1 delivery queued again") || !strings.Contains(out, "2 deliveries left out") ||
			!strings.Contains(out, "retention.payloads") {
			t.Fatalf("replay --since 1h after a sweep: %q, want evt_c queued and the 2 swept ones left out, naming retention.payloads", out)
		}
		waitFor(t, 5*time.Second, "evt_c delivered again", func() bool { return web.Count() == before+1 })
		waitStatus(t, tm, c, "web", queue.Done, 5*time.Second)
		for _, row := range []int64{a, b} {
			if d := deliveriesOf(t, tm, row)["web"]; d.Status != queue.Done || d.Attempts != 1 {
				t.Errorf("swept event %d: delivery %s after %d attempt(s), want left done", row, d.Status, d.Attempts)
			}
		}
		if out := cliRun(t, tm.Dir, "dead"); strings.Contains(out, "evt_") {
			t.Errorf("replay of swept events made dead letters:\n%s", out)
		}
	})
	t.Run("Mistakes are named", func(t *testing.T) {
		cfg := storeConfig(t, tm.Dir)
		if _, _, err := runCLI(t, "replay", "--config", cfg, "999999"); err == nil || !strings.Contains(err.Error(), "event 999999: event not found") {
			t.Errorf("replay of an unknown event: %v, want event 999999: event not found", err)
		}
		// serve's own config, which names its targets.
		serveCfg := filepath.Join(t.TempDir(), "serve.toml")
		text := deadConfig(web.URL, "http://127.0.0.1:1/unused") + fmt.Sprintf("\n[store]\npath = %q\n", filepath.Join(tm.Dir, "hookbox.db"))
		if err := os.WriteFile(serveCfg, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, err := runCLI(t, "replay", "--config", serveCfg, "--target", "nosuch", strconv.FormatInt(a, 10))
		var usage *cli.UsageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), `--target "nosuch": no such target`) || !strings.Contains(err.Error(), "web") {
			t.Errorf("replay --target nosuch: %v, want a usage error naming the flag and the configured targets", err)
		}
		if _, _, err := runCLI(t, "replay", "--config", cfg, "--since", "1h", "--until", "2h"); !errors.As(err, &usage) || !strings.Contains(err.Error(), "--until must be later than --since") {
			t.Errorf("replay --since 1h --until 2h: %v, want a usage error", err)
		}
		if _, stderr, err := runCLI(t, "events", "--config", cfg, "--source", "nosuch"); err != nil || !strings.Contains(stderr, "no events match") {
			t.Errorf("events --source nosuch: err=%v stderr=%q, want no events match (events are stored)", err, stderr)
		}
	})
	t.Run("Needs a selection", func(t *testing.T) {
		_, _, err := runCLI(t, "replay", "--config", storeConfig(t, tm.Dir))
		if err == nil || !strings.Contains(err.Error(), "give an event number, --dead, or --since") {
			t.Fatalf("replay without a selection: %v, want a usage error", err)
		}
	})
}

// A target added after its events came (or renamed) has no deliveries of
// them: replay --since --target gives it one for each event it matches,
// and says so; done deliveries of the other target are left alone.
func TestReplay_BackfillsANewTarget(t *testing.T) {
	ok := func(int) int { return http.StatusOK }
	old := newRecordingTarget(t, ok)
	cfg := deliveryConfig + fmt.Sprintf(`
[[target]]
name = "old"
source = "shop"
url = %q
`, old.URL)
	tm := MustRunMain(t, cfg, "")
	for id, typ := range map[string]string{"evt_1": "order.created", "evt_2": "order.paid", "evt_3": "refund.created"} {
		postEvent(t, tm, id, typ, []byte(`{"n":1}`), "accepted")
	}
	waitFor(t, 5*time.Second, "the old target to get all three", func() bool { return old.Count() == 3 })
	tm.Close()

	added := newRecordingTarget(t, ok)
	cfg += fmt.Sprintf(`
[[target]]
name = "new"
source = "shop"
events = ["order.*"]
url = %q
`, added.URL)
	tm = MustRunMain(t, cfg, tm.Dir)
	path := filepath.Join(tm.Dir, "full.toml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf("[store]\npath = %q\n", filepath.Join(tm.Dir, "hookbox.db"))+cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runCLI(t, "replay", "--config", path, "--since", "1h", "--target", "new")
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "0 deliveries queued again") || !strings.Contains(out, "2 deliveries added for events that had none for new") {
		t.Fatalf("replay --since 1h --target new said:\n%s\nwant 0 queued again and 2 added", out)
	}
	waitFor(t, 5*time.Second, "the new target to get the two order events", func() bool { return added.Count() == 2 })
	for _, h := range added.Hits() {
		if id := h.Header.Get("Hookbox-Event-Id"); id == "evt_3" {
			t.Errorf("the new target got %s, whose type its events pattern does not match", id)
		}
	}
	for _, id := range []string{"evt_1", "evt_2"} {
		waitStatus(t, tm, eventRow(t, tm, "shop", id), "new", queue.Done, 5*time.Second)
	}
	// Again: they have deliveries now, which replay runs again; none added.
	out, _, err = runCLI(t, "replay", "--config", path, "--since", "1h", "--target", "new")
	if err != nil || !strings.HasPrefix(out, "2 deliveries queued again") || strings.Contains(out, "added") {
		t.Errorf("second replay: %v\n%s\nwant 2 queued again and none added", err, out)
	}
	waitFor(t, 5*time.Second, "the replayed deliveries", func() bool { return added.Count() == 4 })
	if n := old.Count(); n != 3 {
		t.Errorf("the old target got %d requests, want its 3 (not replayed)", n)
	}
}
