package main_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"hookbox/internal/cli"
)

// The local sink prints one line for each request as it is answered, on
// stderr, whether or not it is a terminal (here: a pipe): time, source,
// event id, type, the result and the body's size.
func TestSink_PrintsALinePerRequest(t *testing.T) {
	bin := buildHookbox(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	p := launchServeIn(t, dir, addr, stdout, stderr, bin, "serve", "--listen", addr)

	body := `{"id":"evt_sink_1","type":"demo.created"}`
	for i := 0; i < 2; i++ {
		code, _, err := post("http://"+addr+"/hooks/demo", map[string]string{"Content-Type": "application/json"}, []byte(body))
		if err != nil || code != http.StatusOK {
			t.Fatalf("post: %d %v", code, err)
		}
	}
	resp, err := http.Get("http://" + addr + "/hooks/demo")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	want := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d  demo\s+evt_sink_1\s+demo\.created\s+accepted\s+41 B$`),
		regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d  demo\s+evt_sink_1\s+demo\.created\s+duplicate\s+41 B$`),
		regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d  demo\s+-\s+-\s+405 method not allowed\s+0 B$`),
	}
	waitFor(t, 5*time.Second, "a line for each request", func() bool {
		for _, re := range want {
			if !re.MatchString(stderr.String()) {
				return false
			}
		}
		return true
	})
	if !strings.Contains(stdout.String(), "http://"+addr+"/hooks/demo") {
		t.Errorf("stdout does not say where to send:\n%s", stdout.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "hookbox.db")); err != nil {
		t.Errorf("the sink's store in its working directory: %v", err)
	}
	p.stop(t, syscall.SIGTERM, 10*time.Second)
}

// With --log-format json the start line is a JSON log line, and stdout
// carries no guide text.
func TestServe_StartLineThroughTheLogger(t *testing.T) {
	bin := buildHookbox(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	p := launchServeIn(t, dir, addr, stdout, stderr, bin, "serve", "--listen", addr, "--log-format", "json")
	waitFor(t, 5*time.Second, "the start line", func() bool { return strings.Contains(stderr.String(), "listening") })
	var start map[string]any
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "listening") {
			if err := json.Unmarshal([]byte(line), &start); err != nil {
				t.Fatalf("start line %q is not JSON: %v", line, err)
			}
		}
	}
	if start["listen"] != "http://"+addr || start["level"] != "info" {
		t.Errorf("start line %v, want level info and listen http://%s", start, addr)
	}
	if stdout.String() != "" {
		t.Errorf("stdout under --log-format json: %q, want nothing", stdout.String())
	}
	p.stop(t, syscall.SIGTERM, 10*time.Second)
}

// A sink whose port is taken says how to pick another and leaves no store
// or lock behind; --listen beyond loopback without a config is refused.
func TestSink_PortInUseAndListen(t *testing.T) {
	bin := buildHookbox(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"Port in use", []string{"serve", "--listen", taken.Addr().String()}, 1, "pick another port with --listen 127.0.0.1:PORT"},
		{"Not loopback", []string{"serve", "--listen", "0.0.0.0:0"}, 2, "loopback only"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(bin, tt.args...)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tt.code {
				t.Fatalf("exit: %v, want %d\n%s", err, tt.code, out)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("output %q, want it to say %q", out, tt.want)
			}
			if left, _ := os.ReadDir(dir); len(left) > 0 {
				t.Errorf("left behind in the working directory: %v", left)
			}
		})
	}
}

// Every command answers --help with its summary, flags and arguments
// (exit 0, on stdout); an unknown flag is reported once (exit 2).
func TestCLI_HelpAndMistakes(t *testing.T) {
	bin := buildHookbox(t)
	run := func(args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir = t.TempDir()
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return o.String(), e.String(), code
	}
	list, _, code := run("help")
	if code != 0 {
		t.Fatalf("help: exit %d", code)
	}
	commands := regexp.MustCompile(`(?m)^  ([a-z]+)  +\S`).FindAllStringSubmatch(list, -1)
	if len(commands) < 8 {
		t.Fatalf("help lists %d commands:\n%s", len(commands), list)
	}
	for _, c := range commands {
		name := c[1]
		if name == "help" {
			continue
		}
		for _, args := range [][]string{{name, "--help"}, {name, "-h"}, {"help", name}} {
			stdout, stderr, code := run(args...)
			if code != 0 || stderr != "" {
				t.Errorf("%v: exit %d, stderr %q; want 0 and nothing", args, code, stderr)
			}
			if !strings.HasPrefix(stdout, "usage: hookbox "+name) {
				t.Errorf("%v: stdout %q, want it to start with the usage line", args, stdout)
			}
			if name != "version" && !strings.Contains(stdout, "\nFlags:\n") {
				t.Errorf("%v: stdout %q, want the flags", args, stdout)
			}
		}
		_, stderr, code := run(name, "--no-such-flag")
		if code != 2 || strings.Count(stderr, "no-such-flag") != 1 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%s --no-such-flag: exit %d, stderr %q; want 2 and one line naming the flag once", name, code, stderr)
		}
	}
	if out, _, code := run("--version"); code != 0 || !strings.HasPrefix(out, "hookbox ") || !strings.Contains(out, "\ncommit ") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
	if _, stderr, code := run("check", "sem.toml"); code != 2 || !strings.Contains(stderr, "hookbox check --config sem.toml") {
		t.Errorf("check sem.toml: exit %d, stderr %q; want 2 suggesting --config sem.toml", code, stderr)
	}
	if !strings.Contains(list, "event ") || !strings.Contains(list, "replay") {
		t.Errorf("help lacks commands:\n%s", list)
	}
}

// hookbox events says when more events match than it printed.
func TestCLI_EventsSaysWhenMoreExist(t *testing.T) {
	tm := MustRunMain(t, "", "")
	for i := 0; i < 3; i++ {
		if code, _ := tm.Post("/hooks/demo", map[string]string{"Idempotency-Key": fmt.Sprint("evt_more_", i)}, []byte(`{}`)); code != http.StatusOK {
			t.Fatalf("post: %d", code)
		}
	}
	cfg := storeConfig(t, tm.Dir)
	_, stderr, err := runCLI(t, "events", "--config", cfg, "--limit", "2")
	if err != nil || !strings.Contains(stderr, "the newest 2 events shown; more match") {
		t.Errorf("events --limit 2 of 3: err %v, stderr %q; want it to say more match", err, stderr)
	}
	for _, limit := range []string{"3", "0"} {
		if _, stderr, err := runCLI(t, "events", "--config", cfg, "--limit", limit); err != nil || stderr != "" {
			t.Errorf("events --limit %s of 3: err %v, stderr %q; want nothing said", limit, err, stderr)
		}
	}
	var ue *cli.UsageError
	if _, _, err := runCLI(t, "events", "--limit", "x"); !errors.As(err, &ue) {
		t.Errorf("events --limit x: %v, want a usage error", err)
	}
}
