package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/internal/cli"
	"hookbox/provider"
	"hookbox/sqlite"
)

func TestCLI_Check(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("Ok", func(t *testing.T) {
		p := write("ok.toml", githubConfig(""))
		stdout, stderr, err := runCLI(t, "check", "--config", p)
		if err != nil {
			t.Fatalf("check: %v (stderr %q)", err, stderr)
		}
		if !strings.Contains(stdout, "ok") {
			t.Fatalf("stdout %q, want it to say ok", stdout)
		}
	})
	t.Run("Bad keys", func(t *testing.T) {
		p := write("bad.toml", `[delivery]
backoff = "soon"

[[source]]
name = "stripe"
verify = "stirpe"
secret = "x"
`)
		_, stderr, err := runCLI(t, "check", "--config", p)
		if err == nil {
			t.Fatal("check of a bad config succeeded")
		}
		var ue *cli.UsageError
		if errors.As(err, &ue) {
			t.Fatalf("err=%v is a usage error (exit 2), want exit 1", err)
		}
		for _, re := range []string{`delivery\.backoff`, `source\[(0|stripe)\]\.verify`} {
			if !regexp.MustCompile(re).MatchString(stderr) {
				t.Fatalf("stderr %q does not name %s", stderr, re)
			}
		}
	})
	t.Run("Store not there yet", func(t *testing.T) {
		for _, c := range []struct{ store, want string }{
			{filepath.Join(dir, "new.db"), "no store at " + filepath.Join(dir, "new.db") + " yet"},
			{filepath.Join(dir, "sub", "new.db"), "nor its directory " + filepath.Join(dir, "sub") + " exists yet"},
		} {
			p := write("store.toml", githubConfig(fmt.Sprintf("[store]\npath = %q\n", c.store)))
			stdout, stderr, err := runCLI(t, "check", "--config", p)
			if err != nil {
				t.Fatalf("check: %v (stderr %q)", err, stderr)
			}
			if !strings.Contains(stdout, "note: ") || !strings.Contains(stdout, c.want) {
				t.Fatalf("stdout %q, want a note saying %q", stdout, c.want)
			}
		}
		existing := filepath.Join(dir, "old.db")
		if err := os.WriteFile(existing, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		p := write("store.toml", githubConfig(fmt.Sprintf("[store]\npath = %q\n", existing)))
		if stdout, _, err := runCLI(t, "check", "--config", p); err != nil || strings.Contains(stdout, "note:") {
			t.Fatalf("check of a config whose store exists: stdout %q, err %v; want ok and no note", stdout, err)
		}
	})
	t.Run("Command programs", func(t *testing.T) {
		plain := write("plain.txt", "not a program")
		good := write("good.sh", "#!/bin/sh\nexit 0\n")
		if err := os.Chmod(good, 0o755); err != nil {
			t.Fatal(err)
		}
		var targets strings.Builder
		for name, program := range map[string]string{
			"missing": filepath.Join(dir, "nope.sh"), "plain": plain, "dir": dir,
			"relative": "./good.sh", "unfound": "no-such-program-anywhere", "good": good, "inpath": "sh",
		} {
			fmt.Fprintf(&targets, "[[target]]\nname = %q\nsource = \"github\"\ncommand = [%q]\n", name, program)
		}
		// Found only in the PATH the target gives its command.
		fmt.Fprintf(&targets, "[[target]]\nname = \"ownpath\"\nsource = \"github\"\ncommand = [\"good.sh\"]\nenv = { PATH = %q }\n", dir)
		p := write("cmds.toml", githubConfig(targets.String()))
		stdout, stderr, err := runCLI(t, "check", "--config", p)
		if err != nil {
			t.Fatalf("check: %v (stderr %q); a program that cannot run yet is a note, not an error", err, stderr)
		}
		for _, want := range []string{
			`target "missing" runs ` + filepath.Join(dir, "nope.sh") + `: no such file`,
			`target "plain" runs ` + plain + `, which is not executable`,
			`target "dir" runs ` + dir + `, which is not a file`,
			`target "relative" runs "./good.sh", a relative path`,
			`target "unfound" runs "no-such-program-anywhere": command not found in PATH`,
		} {
			if !strings.Contains(stdout, "note: "+want) {
				t.Errorf("check output lacks a note %q:\n%s", want, stdout)
			}
		}
		for _, name := range []string{`"good"`, `"inpath"`, `"ownpath"`} {
			if strings.Contains(stdout, "target "+name) {
				t.Errorf("check notes target %s, which can run:\n%s", name, stdout)
			}
		}
	})
	t.Run("Missing file", func(t *testing.T) {
		if _, _, err := runCLI(t, "check", "--config", filepath.Join(dir, "nope.toml")); err == nil {
			t.Fatal("check of a missing file succeeded")
		}
	})
	t.Run("No config", func(t *testing.T) {
		_, _, err := runCLI(t, "check")
		var ue *cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "HOOKBOX_CONFIG") {
			t.Fatalf("err=%v, want a usage error naming both ways to give the config", err)
		}
	})
}

func TestCLI_Events(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer target.Close()
	tm := MustRunMain(t, githubConfig(fmt.Sprintf(`
[[source]]
name = "other"
verify = "none"
insecure = true
event_id = "json:id"

[[target]]
name = "sink"
source = "github"
url = %q
`, target.URL)), "")
	for i := range 3 {
		body := fmt.Appendf(nil, `{"n":%d}`, i)
		code, resp := tm.Post("/hooks/github", githubHeaders(fmt.Sprintf("gh-%d", i), body), body)
		expectAnswer(t, code, resp, "accepted", fmt.Sprintf("gh-%d", i))
	}
	code, resp := tm.Post("/hooks/other", nil, []byte(`{"id":"o-1"}`))
	expectAnswer(t, code, resp, "accepted", "o-1")
	cfg := storeConfig(t, tm.Dir)
	waitFor(t, 10*time.Second, "deliveries to finish", func() bool {
		n := 0
		for _, e := range listEvents(t, tm.Dir) {
			for _, d := range e.Deliveries {
				if d.Status == "done" {
					n++
				}
			}
		}
		return n == 3
	})

	t.Run("JSON keys", func(t *testing.T) {
		stdout, _, err := runCLI(t, "events", "--config", cfg, "--json")
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(strings.NewReader(stdout))
		lines := 0
		for sc.Scan() {
			lines++
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			for _, k := range []string{"id", "source", "event_id", "type", "received_at", "redeliveries", "deliveries"} {
				if _, ok := m[k]; !ok {
					t.Fatalf("line %q has no %q", sc.Text(), k)
				}
			}
			if _, err := time.Parse(time.RFC3339, m["received_at"].(string)); err != nil {
				t.Fatalf("received_at %q is not RFC3339", m["received_at"])
			}
			ds, ok := m["deliveries"].([]any)
			if !ok {
				t.Fatalf("deliveries %v is not a list", m["deliveries"])
			}
			if m["source"] == "github" {
				if len(ds) != 1 {
					t.Fatalf("github event has %d deliveries, want 1", len(ds))
				}
				d := ds[0].(map[string]any)
				for _, k := range []string{"target", "status", "attempts", "last_error"} {
					if _, ok := d[k]; !ok {
						t.Fatalf("delivery %v has no %q", d, k)
					}
				}
				if d["target"] != "sink" || d["status"] != "done" || d["attempts"] != float64(1) {
					t.Fatalf("delivery %v, want sink done after 1 attempt", d)
				}
			}
		}
		if lines != 4 {
			t.Fatalf("%d lines, want 4", lines)
		}
	})
	t.Run("Newest first, filters", func(t *testing.T) {
		all := listEvents(t, tm.Dir)
		if len(all) != 4 || all[0].EventID != "o-1" || all[3].EventID != "gh-0" {
			t.Fatalf("events %+v, want o-1 first and gh-0 last", all)
		}
		gh := listEvents(t, tm.Dir, "--source", "github")
		if len(gh) != 3 {
			t.Fatalf("--source github: %d events, want 3", len(gh))
		}
		for _, e := range gh {
			if e.Source != "github" {
				t.Fatalf("--source github listed %+v", e)
			}
		}
		if got := listEvents(t, tm.Dir, "--limit", "2"); len(got) != 2 || got[0].EventID != "o-1" || got[1].EventID != "gh-2" {
			t.Fatalf("--limit 2: %+v, want o-1 and gh-2", got)
		}
		if got := listEvents(t, tm.Dir, "--source", "github", "--limit", "1"); len(got) != 1 || got[0].EventID != "gh-2" {
			t.Fatalf("--source github --limit 1: %+v, want gh-2", got)
		}
		if got := listEvents(t, tm.Dir, "--status", "done"); len(got) != 3 {
			t.Fatalf("--status done: %d events, want 3", len(got))
		}
		if got := listEvents(t, tm.Dir, "--source", "nope"); len(got) != 0 {
			t.Fatalf("--source nope: %d events, want 0", len(got))
		}
	})
	t.Run("Text", func(t *testing.T) {
		stdout, _, err := runCLI(t, "events", "--config", cfg)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
		if len(lines) != 5 {
			t.Fatalf("%d lines, want a header and 4 events:\n%s", len(lines), stdout)
		}
		for _, col := range []string{"ID", "RECEIVED", "SOURCE", "EVENT ID", "TYPE", "REDELIVERIES", "DELIVERIES"} {
			if !strings.Contains(lines[0], col) {
				t.Fatalf("header %q has no %s column", lines[0], col)
			}
		}
		if !strings.Contains(lines[1], "o-1") || !strings.Contains(stdout, "sink:done(1)") || !strings.Contains(stdout, "push") {
			t.Fatalf("events text:\n%s", stdout)
		}
	})
	t.Run("Bad flags", func(t *testing.T) {
		for _, args := range [][]string{
			{"events", "--config", cfg, "extra"},
			{"events", "--config", cfg, "--status", "bogus"},
			{"events", "--config", cfg, "--limit", "-1"},
			{"dead", "--config", cfg, "--limit", "-1"},
		} {
			_, _, err := runCLI(t, args...)
			var ue *cli.UsageError
			if !errors.As(err, &ue) {
				t.Fatalf("%v: err=%v, want a usage error", args, err)
			}
		}
	})
}

func TestCLI_Event(t *testing.T) {
	tm := MustRunMain(t, "", "")
	body := []byte{0xff, 0xfe, 0x00, 'h', 'i', 0x80, '\r', '\n', 0xc3} // not UTF-8, no trailing newline
	code, resp := tm.Post("/hooks/raw", map[string]string{"Idempotency-Key": "bin-1", "Content-Type": "application/octet-stream"}, body)
	expectAnswer(t, code, resp, "accepted", "bin-1")
	list := listEvents(t, tm.Dir)
	if len(list) != 1 {
		t.Fatalf("%d events, want 1", len(list))
	}
	id := fmt.Sprint(list[0].ID)
	cfg := storeConfig(t, tm.Dir)

	t.Run("Body is byte-exact", func(t *testing.T) {
		stdout, stderr, err := runCLI(t, "event", "--config", cfg, "--body", id)
		if err != nil {
			t.Fatalf("event --body: %v (stderr %q)", err, stderr)
		}
		if stdout != string(body) {
			t.Fatalf("event --body wrote %q, want %q", stdout, body)
		}
	})
	t.Run("Details", func(t *testing.T) {
		stdout, _, err := runCLI(t, "event", "--config", cfg, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"raw", "bin-1", "Idempotency-Key: bin-1", "9 bytes"} {
			if !strings.Contains(stdout, want) {
				t.Fatalf("event output has no %q:\n%s", want, stdout)
			}
		}
		stdout, _, err = runCLI(t, "event", "--config", cfg, "--json", id)
		if err != nil {
			t.Fatal(err)
		}
		var e listedEvent
		if err := json.Unmarshal([]byte(stdout), &e); err != nil || e.EventID != "bin-1" || e.Source != "raw" {
			t.Fatalf("event --json %q (%v), want bin-1 from raw", stdout, err)
		}
	})
	t.Run("Unknown id", func(t *testing.T) {
		if _, _, err := runCLI(t, "event", "--config", cfg, "999"); err == nil {
			t.Fatal("event 999 succeeded, want an error")
		}
		_, _, err := runCLI(t, "event", "--config", cfg, "abc")
		var ue *cli.UsageError
		if !errors.As(err, &ue) {
			t.Fatalf("event abc: err=%v, want a usage error", err)
		}
	})
	t.Run("No id", func(t *testing.T) {
		_, _, err := runCLI(t, "event", "--config", cfg)
		var ue *cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "ID column of hookbox events") {
			t.Fatalf("event without an id: err=%v, want a usage error saying where the id comes from", err)
		}
	})
	t.Run("Flags after the argument", func(t *testing.T) {
		stdout, _, err := runCLI(t, "event", "--config", cfg, id, "--body")
		var ue *cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--body") {
			t.Fatalf("event ID --body: err=%v, want a usage error naming --body", err)
		}
		if stdout != "" {
			t.Fatalf("wrote %q on a usage error", stdout)
		}
	})
	t.Run("No store", func(t *testing.T) {
		if _, _, err := runCLI(t, "event", "--config", storeConfig(t, t.TempDir()), "1"); err == nil {
			t.Fatal("event on a missing store succeeded")
		}
	})
}

func TestCLI_Version(t *testing.T) {
	stdout, _, err := runCLI(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^hookbox \S+\ncommit \S+\n`).MatchString(stdout) || !strings.Contains(stdout, runtime.Version()) {
		t.Fatalf("version printed %q, want the version and %s", stdout, runtime.Version())
	}
	_, _, err = runCLI(t, "version", "extra")
	var ue *cli.UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("version extra: err=%v, want a usage error", err)
	}
}

func TestCLI_Usage(t *testing.T) {
	for _, args := range [][]string{nil, {"frobnicate"}} {
		_, stderr, err := runCLI(t, args...)
		var ue *cli.UsageError
		if !errors.As(err, &ue) || !strings.Contains(stderr, "Usage") {
			t.Fatalf("%v: err=%v stderr=%q, want a usage error and the usage text", args, err, stderr)
		}
	}
}

// `hookbox events` reads a page at a time: every event comes out once,
// newest first, across pages, with the filters applied on each page.
func TestCLI_EventsPages(t *testing.T) {
	dir := t.TempDir()
	db, err := sqlite.Open(filepath.Join(dir, "hookbox.db"), sqlite.Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2345
	ctx := context.Background()
	if _, err := db.Exec(ctx, `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < ?)
		INSERT INTO events (id, source, event_id, received_at, body_size) SELECT i, CASE WHEN i % 3 = 0 THEN 'stripe' ELSE 'github' END, 'e'||i, i, 0 FROM c`, n); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO deliveries (event, target, status, attempts, run_at, created_at)
		SELECT id, 'web', CASE WHEN id % 7 = 0 THEN 'pending' ELSE 'done' END, 0, 0, 0 FROM events`); err != nil {
		t.Fatal(err)
	}
	wantFiltered := 0 // github events (not a multiple of 3) with a pending delivery (a multiple of 7)
	for i := 1; i <= n; i++ {
		if i%3 != 0 && i%7 == 0 {
			wantFiltered++
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"--limit", "0"}, n},
		{[]string{"--limit", "1500"}, 1500},
		{[]string{"--limit", "0", "--source", "github", "--status", "pending"}, wantFiltered},
	} {
		lines := jsonLines[listedEvent](t, cliRun(t, dir, append([]string{"events", "--json"}, c.args...)...))
		if len(lines) != c.want {
			t.Errorf("events %v: %d lines, want %d", c.args, len(lines), c.want)
		}
		for i := 1; i < len(lines); i++ {
			if lines[i].ID >= lines[i-1].ID {
				t.Fatalf("events %v: line %d is event %d after %d, want newest first, each once", c.args, i, lines[i].ID, lines[i-1].ID)
			}
		}
	}
}

// hookbox presets lists every preset of the registry, with the table's
// columns.
func TestCLI_Presets(t *testing.T) {
	out, _, err := runCLI(t, "presets", "--json")
	if err != nil {
		t.Fatal(err)
	}
	type line struct {
		Name         string `json:"name"`
		EventID      string `json:"event_id"`
		Docs         string `json:"docs"`
		Tolerance    string `json:"tolerance"`
		OrderKey     string `json:"order_key"`
		OrderVersion string `json:"order_version"`
		OrderDocs    string `json:"order_docs"`
		Refetch      *struct {
			Base string `json:"base"`
			Rate string `json:"rate"`
			Docs string `json:"docs"`
		} `json:"refetch"`
	}
	lines := jsonLines[line](t, out)
	if len(lines) != len(provider.All()) {
		t.Fatalf("presets --json: %d lines, want one per preset (%d)", len(lines), len(provider.All()))
	}
	for i, p := range provider.All() {
		l := lines[i]
		if l.Name != p.Name || l.EventID != p.EventID || l.Docs != p.Docs || l.Tolerance != p.ToleranceText() ||
			l.OrderKey != p.OrderKey || l.OrderVersion != p.OrderVersion || l.OrderDocs != p.OrderDocs {
			t.Errorf("line %+v, want %s's", l, p.Name)
		}
		if r := p.Refetch; (r == nil) != (l.Refetch == nil) || r != nil && (l.Refetch.Base != r.Base || l.Refetch.Rate != r.Rate || l.Refetch.Docs != r.Docs) {
			t.Errorf("%s: refetch %+v, want %+v", p.Name, l.Refetch, r)
		}
	}
	table, _, err := runCLI(t, "presets")
	if err != nil || !regexp.MustCompile(`(?m)^stripe\s+Stripe-Signature .*json:id\s+json:type\s+5m\s+json:data.object.id,json:related_object.id\s+json:created\s+https://api.stripe.com 100/s\s+https://`).MatchString(table) ||
		!regexp.MustCompile(`(?m)^slack\s.*5m\s+-\s+-\s+-\s+https://`).MatchString(table) {
		t.Errorf("presets table (err %v):\n%s", err, table)
	}
}
