package main_test

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	hookbox "hookbox"
	"hookbox/internal/cli"
)

// TestBackup copies the store of a real serve while webhooks keep coming:
// the copy is owner-only, opens as a store, and holds every event
// acknowledged before the backup began, byte for byte; a second backup
// to the same file is refused and leaves it as it was.
func TestBackup(t *testing.T) {
	bin := buildHookbox(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := filepath.Join(dir, "hookbox.toml")
	writeFile(t, cfg, fmt.Sprintf(`
[server]
listen = %q

[store]
path = %q

[[source]]
name = "shop"
verify = "none"
insecure = true
event_id = "header:X-Id"
`, addr, filepath.Join(dir, "hookbox.db")))
	p := startServe(t, bin, cfg, addr)

	var mu sync.Mutex
	acked := map[string]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("evt_%d_%d", w, i)
				if code, _ := postBudgetID(t, "http://"+addr, id); code == http.StatusOK {
					mu.Lock()
					acked[id] = true
					mu.Unlock()
				}
			}
		})
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	waitFor(t, 20*time.Second, "300 events acknowledged", func() bool { return count() >= 300 })
	mu.Lock()
	before := make(map[string]bool, len(acked))
	for id := range acked {
		before[id] = true
	}
	mu.Unlock()

	copyPath := filepath.Join(t.TempDir(), "copy.db")
	out, err := exec.Command(bin, "backup", "--config", cfg, copyPath).CombinedOutput()
	if err != nil {
		t.Fatalf("hookbox backup while serve ingests: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "backup: wrote "+copyPath+" (") || !strings.Contains(string(out), " in ") {
		t.Errorf("backup said %q, want the file, its size and the time taken", out)
	}
	during := count()
	close(stop)
	wg.Wait()
	if during <= len(before) {
		t.Logf("no event was acknowledged while the backup ran (%d before, %d after)", len(before), during)
	}
	p.stop(t, syscall.SIGTERM, 20*time.Second)

	st, err := os.Stat(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("copy mode %v, want 0600", st.Mode().Perm())
	}
	integrityCheck(t, copyPath)
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(copyPath), ".copy.db.tmp-*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left beside the copy: %v", leftovers)
	}

	// The copy is a store every command reads.
	copyCfg := filepath.Join(t.TempDir(), "copy.toml")
	writeFile(t, copyCfg, fmt.Sprintf("[store]\npath = %q\n", copyPath))
	events, stderr, err := execute([]string{"events", "--config", copyCfg, "--json", "--limit", "0"}, func(string) string { return "" })
	if err != nil {
		t.Fatalf("events on the copy: %v\n%s", err, stderr)
	}
	inCopy := map[string]int64{}
	for _, e := range jsonLines[struct {
		ID      int64  `json:"id"`
		EventID string `json:"event_id"`
	}](t, events) {
		inCopy[e.EventID] = e.ID
	}
	missing := 0
	for id := range before {
		if _, ok := inCopy[id]; !ok {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of the %d events acknowledged before the backup are missing from the copy", missing, len(before))
	}
	mu.Lock()
	for id := range inCopy {
		if !acked[id] {
			// Stored but its answer not read yet when the posting stopped
			// is possible; an id never sent is not.
			if !strings.HasPrefix(id, "evt_") {
				t.Errorf("the copy holds %q, never sent", id)
			}
		}
	}
	mu.Unlock()
	var some string
	for id := range before {
		some = id
		break
	}
	body, _, err := execute([]string{"event", "--config", copyCfg, "--body", fmt.Sprint(inCopy[some])}, func(string) string { return "" })
	if err != nil || body != `{"id":"`+some+`"}` {
		t.Errorf("the body of %s in the copy: %q (%v), want it as sent", some, body, err)
	}
	t.Logf("%d events acknowledged before the backup, %d by its end; the copy holds %d", len(before), during, len(inCopy))

	// Never over an existing file.
	if st, err = os.Stat(copyPath); err != nil {
		t.Fatal(err)
	}
	_, stderr, err = execute([]string{"backup", "--config", cfg, copyPath}, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("backup over an existing file: %v %s, want a refusal", err, stderr)
	}
	if st2, _ := os.Stat(copyPath); st2.Size() != st.Size() || !st2.ModTime().Equal(st.ModTime()) {
		t.Errorf("the refused backup changed the existing file")
	}
}

func TestBackup_Refusals(t *testing.T) {
	dir := t.TempDir()
	pg := filepath.Join(dir, "pg.toml")
	writeFile(t, pg, "[store]\nurl = \"postgres://hookbox@db.example/hookbox\"\n")
	_, _, err := execute([]string{"backup", "--config", pg, filepath.Join(dir, "x.db")}, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "pg_dump") {
		t.Errorf("backup of a PostgreSQL store: %v, want a pointer to pg_dump", err)
	}
	var usage *cli.UsageError
	if errors.As(err, &usage) {
		t.Errorf("backup of a PostgreSQL store: a usage error (exit 2), want a failure (exit 1)")
	}

	missing := filepath.Join(dir, "none.toml")
	writeFile(t, missing, fmt.Sprintf("[store]\npath = %q\n", filepath.Join(dir, "nothing.db")))
	if _, _, err := execute([]string{"backup", "--config", missing, filepath.Join(dir, "x.db")}, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "no store at") {
		t.Errorf("backup of a store that does not exist: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nothing.db")); err == nil {
		t.Error("backup created the store it was to copy")
	}
	if _, _, err := execute([]string{"backup", "--config", missing}, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "missing argument") {
		t.Errorf("backup without FILE: %v, want a usage error", err)
	}
	stdout, _, err := execute([]string{"backup", "--help"}, func(string) string { return "" })
	if err != nil && !strings.Contains(err.Error(), "help") || !strings.Contains(stdout, "usage: hookbox backup") {
		t.Errorf("backup --help: %v %q", err, stdout)
	}
}

// TestBackup_Progress: a copy that takes a while reports its size as it
// grows, then its end.
func TestBackup_Progress(t *testing.T) {
	tm := MustRunMain(t, "", "")
	body := strings.Repeat("x", 64<<10)
	for i := range 200 {
		if code, _ := tm.Post("/hooks/demo", map[string]string{"X-Event-Id": fmt.Sprint(i)}, []byte(body)); code != http.StatusOK {
			t.Fatalf("post: %d", code)
		}
	}
	var stderr strings.Builder
	c := &hookbox.BackupCommand{Env: cli.Env{Stdout: &stderr, Stderr: &stderr, Getenv: func(string) string { return "" }}, Every: time.Microsecond}
	dest := filepath.Join(t.TempDir(), "copy.db")
	if err := c.Run(t.Context(), []string{"--config", storeConfig(t, tm.Dir), dest}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "backup: wrote "+dest+" (12.") || len(lines) < 2 || !strings.Contains(lines[0], " written after ") {
		t.Errorf("backup of 12.5 MiB said:\n%s\nwant progress lines, then the file, its size (12.x MiB) and the time", stderr.String())
	}
}
