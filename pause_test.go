package main_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/view"
)

// targetsConfig writes the config text with [store] path set to dir's
// store, as serve and the commands read it, and returns its path.
func targetsConfig(tb testing.TB, dir, text string) string {
	tb.Helper()
	p := filepath.Join(dir, "hookbox.toml")
	full := fmt.Sprintf("[store]\npath = %q\n%s", filepath.Join(dir, "hookbox.db"), text)
	if err := os.WriteFile(p, []byte(full), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// postShop sends n unsigned events to tm's "shop" source, ids prefix-0…
func postShop(tb testing.TB, base, prefix string, n int) {
	tb.Helper()
	for i := range n {
		req, _ := http.NewRequest(http.MethodPost, base+"/hooks/shop", strings.NewReader(`{}`))
		req.Header.Set("X-Id", fmt.Sprintf("%s-%d", prefix, i))
		req.Header.Set("X-Type", "order.created")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			tb.Fatalf("post %s-%d: status %d", prefix, i, resp.StatusCode)
		}
	}
}

// statusesOf maps the target's delivery statuses to how many events have
// them, as hookbox events --json shows them.
func statusesOf(tb testing.TB, cfg, target string) map[string]int {
	tb.Helper()
	out, stderr, err := runCLI(tb, "events", "--config", cfg, "--limit", "0", "--json")
	if err != nil {
		tb.Fatalf("events: %v\n%s", err, stderr)
	}
	got := map[string]int{}
	for _, ev := range jsonLines[view.Event](tb, out) {
		for _, d := range ev.Deliveries {
			if d.Target == target {
				got[d.Status]++
			}
		}
	}
	return got
}

// hookboxCLI runs the built binary as a user would, and returns its output.
func hookboxCLI(tb testing.TB, bin string, args ...string) (string, error) {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// hookbox pause and resume, run as commands against a serve running in
// another process: from the moment pause returns, the target gets nothing
// (the other target goes on), its deliveries show paused, and resume lets
// them go without a restart.
func TestPause_CLIAgainstRunningServe(t *testing.T) {
	bin := buildHookbox(t)
	dir := t.TempDir()
	billing, mail := newRecordingTarget(t, nil), newRecordingTarget(t, nil)
	addr := freeAddr(t)
	cfg := targetsConfig(t, dir, fmt.Sprintf("[server]\nlisten = %q\n", addr)+deliveryConfig+fmt.Sprintf(`
[[target]]
name = "billing"
source = "shop"
url = %q

[[target]]
name = "mail"
source = "shop"
url = %q
`, billing.URL, mail.URL))
	startServe(t, bin, cfg, addr)
	base := "http://" + addr

	postShop(t, base, "before", 3)
	waitFor(t, 10*time.Second, "the events before the pause delivered", func() bool { return billing.Count() == 3 && mail.Count() == 3 })

	out, err := hookboxCLI(t, bin, "pause", "--config", cfg, "billing")
	if err != nil || !strings.Contains(out, "paused billing") {
		t.Fatalf("hookbox pause billing: %v\n%s", err, out)
	}
	postShop(t, base, "during", 5)
	waitFor(t, 10*time.Second, "the other target's deliveries", func() bool { return mail.Count() == 8 })
	time.Sleep(300 * time.Millisecond) // room for a wrong delivery to show
	if n := billing.Count(); n != 3 {
		t.Fatalf("billing got %d requests while paused, want the 3 from before", n)
	}
	if got := statusesOf(t, cfg, "billing"); got["paused"] != 5 || got["done"] != 3 {
		t.Fatalf("billing's deliveries while paused: %v, want 5 paused, 3 done", got)
	}
	if out, err := hookboxCLI(t, bin, "pause", "--config", cfg); err != nil || !strings.Contains(out, "billing") {
		t.Errorf("hookbox pause (list): %v\n%s", err, out)
	}
	// A name the config lacks is a usage mistake (exit 2, as replay
	// --target's), naming the ones it has: for pause, and for lanes.
	for _, args := range [][]string{{"pause", "--config", cfg, "biling"}, {"lanes", "--config", cfg, "--target", "biling"}} {
		out, err = hookboxCLI(t, bin, args...)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(out, `"biling"`) || !strings.Contains(out, "billing, mail") {
			t.Errorf("hookbox %s: %v\n%s; want exit 2 naming billing, mail", strings.Join(args, " "), err, out)
		}
	}

	resumed := time.Now()
	out, err = hookboxCLI(t, bin, "resume", "--config", cfg, "billing")
	if err != nil || !strings.Contains(out, "5 deliveries released") {
		t.Fatalf("hookbox resume billing: %v\n%s", err, out)
	}
	waitFor(t, 10*time.Second, "the held deliveries after resume", func() bool { return billing.Count() == 8 })
	t.Logf("delivered %v after resume", time.Since(resumed).Round(time.Millisecond))
	for _, h := range billing.Hits()[3:] {
		if a := h.Header.Get("Hookbox-Attempt"); a != "1" {
			t.Errorf("a held delivery came as attempt %s, want 1: the pause spent none", a)
		}
	}
}

// A pause is kept in the store: a serve started again on it holds the
// target as before, until resume.
func TestPause_RestartStaysPaused(t *testing.T) {
	billing, mail := newRecordingTarget(t, nil), newRecordingTarget(t, nil)
	text := deliveryConfig + fmt.Sprintf(`
[[target]]
name = "billing"
source = "shop"
url = %q

[[target]]
name = "mail"
source = "shop"
url = %q
`, billing.URL, mail.URL)
	tm := MustRunMain(t, text, "")
	cfg := targetsConfig(t, tm.Dir, text)
	if _, stderr, err := runCLI(t, "pause", "--config", cfg, "billing"); err != nil {
		t.Fatalf("pause: %v\n%s", err, stderr)
	}
	postShop(t, tm.URL, "evt", 4)
	waitFor(t, 10*time.Second, "mail's deliveries", func() bool { return mail.Count() == 4 })
	if err := tm.Close(); err != nil {
		t.Fatal(err)
	}

	tm = MustRunMain(t, text, tm.Dir)
	postShop(t, tm.URL, "after-restart", 2)
	waitFor(t, 10*time.Second, "mail's deliveries after the restart", func() bool { return mail.Count() == 6 })
	time.Sleep(1200 * time.Millisecond) // more than a read of the paused targets
	if n := billing.Count(); n != 0 {
		t.Fatalf("billing got %d requests after a restart while paused, want 0", n)
	}
	if got := statusesOf(t, cfg, "billing"); got["paused"] != 6 {
		t.Fatalf("billing's deliveries after the restart: %v, want 6 paused", got)
	}
	if _, stderr, err := runCLI(t, "resume", "--config", cfg, "billing"); err != nil {
		t.Fatalf("resume: %v\n%s", err, stderr)
	}
	waitFor(t, 10*time.Second, "billing's deliveries after resume", func() bool { return billing.Count() == 6 })
}

// inflightTarget is an HTTP target that takes delay over each request and
// records the most requests it had at once.
type inflightTarget struct {
	*httptest.Server
	mu       sync.Mutex
	now, max int
	count    int
}

func newInflightTarget(tb testing.TB, delay time.Duration) *inflightTarget {
	it := &inflightTarget{}
	it.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		it.mu.Lock()
		it.now++
		it.count++
		it.max = max(it.max, it.now)
		it.mu.Unlock()
		time.Sleep(delay)
		it.mu.Lock()
		it.now--
		it.mu.Unlock()
	}))
	tb.Cleanup(it.Close)
	return it
}

func (it *inflightTarget) Stats() (count, most int) {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.count, it.max
}

// checkRate fails unless the starts keep to a token bucket of rate a
// second holding one second's worth: in any span of d, at most
// rate·(1+d) starts, with room for a slow machine (starts lag their token
// by up to 300 ms, and one more). Without a limiter the local targets
// take each backlog in a fraction of a second and break it many times
// over.
func checkRate(t *testing.T, what string, starts []time.Time, rate float64) {
	t.Helper()
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	for i := range starts {
		for j := i; j < len(starts); j++ {
			span := starts[j].Sub(starts[i]).Seconds()
			if n, most := float64(j-i+1), rate*(1+span+0.3)+1; n > most {
				t.Fatalf("%s: %d starts in %.2fs, want at most %.0f at %g/s", what, j-i+1, span, most, rate)
			}
		}
	}
}

func startTimes(hits []targetHit) []time.Time {
	out := make([]time.Time, len(hits))
	for i, h := range hits {
		out[i] = h.At
	}
	return out
}

// Under one burst of events, a target with a rate starts no more than its
// bucket allows and one with a concurrency never has more attempts at
// once, while a target without either takes the whole burst at full
// speed: the throttled ones wait in the store, not in the workers. A
// backlog held by a pause comes back, on resume, at the target's rate.
func TestThrottle_RateAndConcurrencyUnderLoad(t *testing.T) {
	const n, rate = 60, 10.0
	rated, fast := newRecordingTarget(t, nil), newRecordingTarget(t, nil)
	narrow := newInflightTarget(t, 30*time.Millisecond)
	text := deliveryConfig + fmt.Sprintf(`
[[target]]
name = "rated"
source = "shop"
url = %q
rate = "10/s"

[[target]]
name = "narrow"
source = "shop"
url = %q
concurrency = 2

[[target]]
name = "fast"
source = "shop"
url = %q
`, rated.URL, narrow.URL, fast.URL)
	text = strings.Replace(text, "workers = 4", "workers = 8", 1)
	tm := MustRunMain(t, text, "")
	cfg := targetsConfig(t, tm.Dir, text)

	postShop(t, tm.URL, "burst", n)
	waitFor(t, 30*time.Second, "the fast target's deliveries", func() bool { return fast.Count() == n })
	if got := rated.Count(); got >= n/2 {
		t.Errorf("the rated target had %d of %d when the fast one had them all, want fewer than half: the fast one waited for it", got, n)
	}
	waitFor(t, 30*time.Second, "the narrow target's deliveries", func() bool { c, _ := narrow.Stats(); return c == n })
	if _, most := narrow.Stats(); most != 2 {
		t.Errorf("the narrow target had up to %d requests at once, want 2 (its concurrency)", most)
	}
	waitFor(t, 30*time.Second, "the rated target's deliveries", func() bool { return rated.Count() == n })
	checkRate(t, "the burst", startTimes(rated.Hits()), rate)
	waitFor(t, 10*time.Second, "the rated deliveries recorded done", func() bool { return statusesOf(t, cfg, "rated")["done"] == n })
	if strings.Contains(tm.Logs.String(), `"attempt":2`) {
		t.Errorf("an attempt was spent twice on a delivery while throttled:\n%s", tm.Logs.String())
	}

	// A backlog held by a pause catches up at the rate.
	if _, stderr, err := runCLI(t, "pause", "--config", cfg, "rated"); err != nil {
		t.Fatalf("pause: %v\n%s", err, stderr)
	}
	postShop(t, tm.URL, "held", n/2)
	waitFor(t, 30*time.Second, "the fast target's held-phase deliveries", func() bool { return fast.Count() == n+n/2 })
	if _, stderr, err := runCLI(t, "resume", "--config", cfg, "rated"); err != nil {
		t.Fatalf("resume: %v\n%s", err, stderr)
	}
	waitFor(t, 30*time.Second, "the held backlog after resume", func() bool { return rated.Count() == n+n/2 })
	checkRate(t, "the catch-up after resume", startTimes(rated.Hits()[n:]), rate)
}

// On PostgreSQL, as on SQLite: a pause from the command holds a running
// serve's target (the other goes on), and resume lets its deliveries go.
func TestPostgres_PauseResume(t *testing.T) {
	dbURL := postgresSchema(t)
	bin := buildHookbox(t)
	billing, mail := newRecordingTarget(t, nil), newRecordingTarget(t, nil)
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := filepath.Join(dir, "hookbox.toml")
	writeFile(t, cfg, fmt.Sprintf("[server]\nlisten = %q\n\n[store]\nurl_env = \"HOOKBOX_DATABASE_URL\"\n", addr)+deliveryConfig+fmt.Sprintf(`
[[target]]
name = "billing"
source = "shop"
url = %q

[[target]]
name = "mail"
source = "shop"
url = %q
`, billing.URL, mail.URL))
	out := &syncBuffer{}
	cmd := exec.Command(bin, "serve", "--config", cfg, "--log-format", "json")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "HOOKBOX_DATABASE_URL=" + dbURL}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(t, 15*time.Second, "serve on PostgreSQL to answer /healthz", func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	getenv := func(k string) string {
		if k == "HOOKBOX_DATABASE_URL" {
			return dbURL
		}
		return ""
	}
	run := func(args ...string) string {
		t.Helper()
		stdout, stderr, err := execute(args, getenv)
		if err != nil {
			t.Fatalf("hookbox %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		return stdout
	}
	if got := run("pause", "--config", cfg, "billing"); !strings.Contains(got, "paused billing") {
		t.Fatalf("pause: %s", got)
	}
	postShop(t, "http://"+addr, "pg", 4)
	waitFor(t, 10*time.Second, "mail's deliveries", func() bool { return mail.Count() == 4 })
	time.Sleep(300 * time.Millisecond)
	if n := billing.Count(); n != 0 {
		t.Fatalf("billing got %d requests while paused, want 0\n%s", n, out.String())
	}
	if got := run("events", "--config", cfg, "--status", "paused", "--json"); strings.Count(got, `"status":"paused"`) != 4 {
		t.Fatalf("events --status paused: %s, want 4 paused", got)
	}
	if got := run("resume", "--config", cfg, "billing"); !strings.Contains(got, "4 deliveries released") {
		t.Fatalf("resume: %s", got)
	}
	waitFor(t, 10*time.Second, "billing's deliveries after resume", func() bool { return billing.Count() == 4 })
}
