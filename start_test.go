package main_test

import (
	hookbox "hookbox"
	"os/signal"

	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/config"
	"hookbox/dedupe"
	"hookbox/queue"
	"hookbox/sqlite"
)

// A serve that cannot bind its address fails before it touches the queue:
// under systemd's Restart=on-failure it would otherwise recover, claim and
// run deliveries on every failed start.
func TestServe_PortInUseFailsBeforeTheQueue(t *testing.T) {
	var hits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer target.Close()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()

	// A store left by a crash: one delivery marked running.
	path := filepath.Join(t.TempDir(), "hookbox.db")
	row := storeWithDelivery(t, path, "hook", true)

	cfg, err := config.Parse("test.toml", []byte(githubConfig(fmt.Sprintf(`
[[target]]
name = "hook"
source = "github"
url = %q
`, target.URL))), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Server.Listen = taken.Addr().String()
	cfg.Store.Path = path
	m := hookbox.NewMain(cfg, zerolog.New(&syncBuffer{}))
	err = m.Run(context.Background())
	if err == nil {
		m.Close()
		t.Fatalf("serve on %s, an address in use, started", taken.Addr())
	}
	if !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("err = %v, want it to say the address is in use", err)
	}

	db, err := sqlite.Open(path, sqlite.Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ds, err := db.Deliveries(context.Background(), []int64{row})
	if err != nil {
		t.Fatal(err)
	}
	if d := ds[row]; len(d) != 1 || d[0].Status != "running" || d[0].Attempts != 1 {
		t.Fatalf("delivery after the failed start = %+v, want it left running after 1 attempt", d)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the target was called %d times by a serve that failed to start", n)
	}
}

// storeWithDelivery makes a store at path holding one GitHub event with a
// delivery to target, claimed (running, as a crash leaves it) if claimed,
// and returns the event's row.
func storeWithDelivery(t *testing.T, path, target string, claimed bool) int64 {
	t.Helper()
	db, err := sqlite.Open(path, sqlite.Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.IngestEvent(context.Background(), &dedupe.Event{Source: "github", EventID: "d-1", ReceivedAt: time.Now(), Body: []byte(`{}`)}, []string{target})
	if err != nil {
		t.Fatal(err)
	}
	if claimed {
		if jobs, err := db.Claim(context.Background(), 1, time.Minute, time.Now(), nil); err != nil || len(jobs) != 1 {
			t.Fatalf("claim: %d jobs, %v", len(jobs), err)
		}
	}
	return res.ID
}

// Deliveries queued for a target the config no longer names (renamed
// between restarts) are named in a warning at start and go dead at their
// first attempt, not after every retry.
func TestServe_QueuedForARemovedTarget(t *testing.T) {
	dir := t.TempDir()
	row := storeWithDelivery(t, filepath.Join(dir, "hookbox.db"), "old-name", false)
	tm := MustRunMain(t, githubConfig(`
[delivery]
max_attempts = 5
[[target]]
name = "new-name"
source = "github"
url = "http://127.0.0.1:9/"
`), dir)
	d := waitStatus(t, tm, row, "old-name", queue.Dead, 5*time.Second)
	if d.Attempts != 1 || !strings.Contains(d.LastError, "no longer configured") {
		t.Errorf("dead after %d attempts with %q, want 1 attempt naming the missing target", d.Attempts, d.LastError)
	}
	if logs := tm.Logs.String(); !strings.Contains(logs, `"target":"old-name","deliveries":1`) || !strings.Contains(logs, "no longer names") {
		t.Errorf("logs do not warn about the removed target:\n%s", logs)
	}
}

// One serve per store however its path is spelled: a second serve naming
// the same store through a linked directory or a linked file is refused.
func TestServe_OneServePerStoreThroughSymlinks(t *testing.T) {
	base := t.TempDir()
	realDir := filepath.Join(base, "data")
	if err := os.Mkdir(realDir, 0o750); err != nil {
		t.Fatal(err)
	}
	linkDir := filepath.Join(base, "var-lib-hookbox")
	if err := os.Symlink(realDir, linkDir); err != nil {
		t.Fatal(err)
	}
	// Named through the link before the store exists: the same identity
	// as the real path once it does.
	before, err := sqlite.RealPath(filepath.Join(linkDir, "hookbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	// A link to a file not created yet: the identity of that file.
	dangling := filepath.Join(base, "soon.db")
	if err := os.Symlink(filepath.Join(realDir, "hookbox.db"), dangling); err != nil {
		t.Fatal(err)
	}
	viaLink, err := sqlite.RealPath(dangling)
	if err != nil {
		t.Fatal(err)
	}
	tm := MustRunMain(t, githubConfig(""), realDir) // creates realDir/hookbox.db
	after, err := sqlite.RealPath(filepath.Join(linkDir, "hookbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := filepath.EvalSymlinks(tm.Config.Store.Path)
	if err != nil {
		t.Fatal(err)
	}
	if before != want || after != want || viaLink != want {
		t.Errorf("identity through the linked directory: %q before the store existed, %q after; through a link to the file before it existed: %q; want all %q", before, after, viaLink, want)
	}
	linkFile := filepath.Join(base, "alias.db")
	if err := os.Symlink(tm.Config.Store.Path, linkFile); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{filepath.Join(linkDir, "hookbox.db"), linkFile} {
		cfg := tm.Config
		cfg.Server.Listen = "127.0.0.1:0"
		cfg.Store.Path = path
		m := hookbox.NewMain(cfg, zerolog.New(&syncBuffer{}))
		err := m.Run(context.Background())
		if err == nil {
			m.Close()
			t.Fatalf("a second serve on %s (the running serve's store) started", path)
		}
		if !strings.Contains(err.Error(), "in use by another hookbox serve") {
			t.Errorf("second serve on %s: %v, want the store-in-use refusal", path, err)
		}
	}
}

// SIGHUP (the terminal of a `hookbox serve &` closing) stops hookbox the way
// SIGTERM does, finishing in-flight work, instead of killing it mid-attempt.
func TestServe_SIGHUPStopsCleanly(t *testing.T) {
	if signal.Ignored(syscall.SIGHUP) {
		// A child inherits an ignored SIGHUP, and serve then leaves it
		// ignored, as under nohup it should.
		t.Skip("the tests run with SIGHUP ignored (under nohup): run them without it to test the hangup")
	}
	bin := buildHookbox(t)
	dir, out := t.TempDir(), t.TempDir()
	addr := freeAddr(t)
	cfg := serveFixture(t, dir, addr, writeTargetScript(t, "exit 0"), out, "")
	p := startServe(t, bin, cfg, addr)
	// Twice, as a closed terminal may send it (the kernel, then the shell):
	// still the clean stop, not the second signal's exit at once.
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.stop(t, syscall.SIGHUP, 10*time.Second)
	if logs := p.output.String(); !strings.Contains(logs, `"signal":"hangup"`) || !strings.Contains(logs, `"message":"stopped"`) {
		t.Errorf("logs after SIGHUP:\n%s\nwant the shutdown named and finished", logs)
	}
}

// The first retention sweep runs soon after the start, not one interval
// later: a serve restarted more often than retention.interval (deploys, a
// crash loop) still sweeps.
func TestServe_FirstSweepSoonAfterStart(t *testing.T) {
	dir := t.TempDir()
	db, err := sqlite.Open(filepath.Join(dir, "hookbox.db"), sqlite.Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.IngestEvent(context.Background(), &dedupe.Event{Source: "github", EventID: "old",
		ReceivedAt: time.Now().Add(-40 * 24 * time.Hour), Body: []byte(`{}`)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	tm := MustRunMain(t, githubConfig("[retention]\ninterval = \"1h\"\n"), dir, func(m *hookbox.Main) { m.FirstSweep = 50 * time.Millisecond })
	waitFor(t, 5*time.Second, "the 40-day-old payload to be swept with a 1h interval", func() bool {
		e, err := tm.DB.GetEvent(context.Background(), res.ID)
		return err == nil && e.Swept
	})
}

// Under nohup (SIGHUP ignored when hookbox starts) a hangup leaves it
// running.
func TestServe_SIGHUPIgnoredUnderNohup(t *testing.T) {
	bin := buildHookbox(t)
	dir, out := t.TempDir(), t.TempDir()
	addr := freeAddr(t)
	cfg := serveFixture(t, dir, addr, writeTargetScript(t, "exit 0"), out, "")
	// trap '' HUP, then exec: the ignored disposition carries over, as nohup's does.
	p := launchServe(t, addr, &syncBuffer{}, io.Discard, "/bin/sh", "-c", `trap '' HUP; exec "$0" serve --config "$1" --log-format json`, bin, cfg)
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
		t.Fatalf("serve under nohup exited on SIGHUP: %v", p.err)
	case <-time.After(time.Second):
	}
	p.stop(t, syscall.SIGTERM, 10*time.Second)
}
