package main_test

import (
	"fmt"
	"hookbox/postgres/pgtest"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// postgresSchema is a schema of its own for a test of serve on PostgreSQL.
func postgresSchema(t *testing.T) string {
	t.Helper()
	return pgtest.Schema(t, "hookbox_e2e_", "serve on PostgreSQL")
}

// serve on PostgreSQL, the binary as users run it: a new event is
// accepted, its copy is a duplicate, the target gets it once, and the read
// commands see it done, through url_env; the URL's password is never
// printed.
func TestPostgres_ServeAcceptedDuplicateDelivered(t *testing.T) {
	dbURL := postgresSchema(t)
	// The server trusts local connections: the password is never checked,
	// only looked for in the output.
	u, _ := url.Parse(dbURL)
	u.User = url.UserPassword(u.User.Username(), "pw-never-printed")
	dbURL = u.String()

	bin := buildHookbox(t)
	web := newRecordingTarget(t, nil)
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := filepath.Join(dir, "hookbox.toml")
	writeFile(t, cfg, fmt.Sprintf(`[server]
listen = %q

[store]
url_env = "HOOKBOX_DATABASE_URL"
`, addr)+deliveryConfig+fmt.Sprintf(`
[[target]]
name = "web"
source = "shop"
url = %q
`, web.URL))

	out := &syncBuffer{}
	p := &serveProc{addr: addr, output: out, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, "serve", "--config", cfg, "--log-format", "json")
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "HOOKBOX_DATABASE_URL=" + dbURL}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	waitFor(t, 15*time.Second, "serve on PostgreSQL to answer /healthz", func() bool {
		select {
		case <-p.exited:
			t.Fatalf("serve exited: %v\n%s", p.err, out.String())
		default:
		}
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	post := func() string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/hooks/shop", strings.NewReader(`{"n":1}`))
		req.Header.Set("X-Id", "evt_pg_1")
		req.Header.Set("X-Type", "order.created")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		fmt.Fprint(&b, resp.StatusCode, " ")
		buf := make([]byte, 512)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		return b.String()
	}
	if got := post(); !strings.Contains(got, "200") || !strings.Contains(got, `"accepted"`) {
		t.Fatalf("first post: %s, want 200 accepted", got)
	}
	if got := post(); !strings.Contains(got, "200") || !strings.Contains(got, `"duplicate"`) {
		t.Fatalf("second post: %s, want 200 duplicate", got)
	}
	getenv := func(k string) string {
		if k == "HOOKBOX_DATABASE_URL" {
			return dbURL
		}
		return ""
	}
	waitFor(t, 10*time.Second, "the delivery to be done", func() bool {
		stdout, _, err := execute([]string{"events", "--config", cfg, "--json"}, getenv)
		return err == nil && strings.Contains(stdout, `"status":"done"`)
	})
	if hits := web.Hits(); len(hits) != 1 {
		t.Fatalf("target got %d requests, want 1", len(hits))
	}
	stdout, _, err := execute([]string{"events", "--config", cfg, "--json"}, getenv)
	if err != nil || !strings.Contains(stdout, `"event_id":"evt_pg_1"`) || !strings.Contains(stdout, `"redeliveries":1`) {
		t.Fatalf("hookbox events: %v\n%s", err, stdout)
	}
	p.stop(t, syscall.SIGTERM, 10*time.Second)
	if strings.Contains(out.String(), "pw-never-printed") {
		t.Fatalf("serve printed the store URL's password:\n%s", out.String())
	}
}
