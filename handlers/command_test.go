//go:build unix

package handlers_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"hookbox/handlers"
)

// grace is the package's SIGTERM-to-SIGKILL grace, which bounds how long a timed-out
// command can take to return.
const grace = 2 * time.Second

// mustScript writes an executable /bin/sh script into a temp dir and returns its path.
func mustScript(tb testing.TB, body string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "target.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		tb.Fatal(err)
	}
	return path
}

// processGone reports whether pid no longer runs: it does not exist, or it is a zombie
// that nobody has reaped yet (as under a container init that does not reap).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// The state follows the parenthesised command name, which may itself contain ") ".
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// waitGone polls until pid is gone or the deadline passes.
func waitGone(tb testing.TB, pid int, within time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			tb.Fatalf("process %d still running %v after Deliver returned, want it killed with its group", pid, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func mustReadPID(tb testing.TB, path string) int {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("read pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		tb.Fatalf("pid file=%q, want a pid", b)
	}
	return pid
}

func TestCommand_Deliver(t *testing.T) {
	t.Run("Stdin and environment", func(t *testing.T) {
		if _, err := os.Stat("/proc/self/environ"); err != nil {
			t.Skip("needs /proc/self/environ to read the child's exact environment")
		}
		t.Setenv("HOOKBOX_TEST_MARKER", "must-not-leak")
		t.Setenv("HOME", "/home/hookbox-test")
		t.Setenv("PATH", "/usr/bin:/bin")
		dir := t.TempDir()
		script := mustScript(t, `cat > "$OUT/stdin" && cat /proc/$$/environ > "$OUT/environ"`)
		cmd := handlers.NewCommand([]string{script}, map[string]string{"OUT": dir, "TARGET_VAR": "a b=c"}, 10*time.Second)
		d := testDelivery()
		d.Body = append(d.Body, bytes.Repeat([]byte{0x00, 0xff, '\n'}, 100_000)...) // larger than a pipe buffer
		res, err := cmd.Deliver(context.Background(), d)
		if err != nil {
			t.Fatalf("Deliver: err=%v output=%q, want nil", err, res.Output)
		}
		if res.ExitCode != 0 || res.Status != 0 {
			t.Errorf("exit code=%d status=%d, want 0 0", res.ExitCode, res.Status)
		}
		stdin, err := os.ReadFile(filepath.Join(dir, "stdin"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(stdin, d.Body) {
			t.Errorf("stdin: %d bytes, want %d bytes byte-exact", len(stdin), len(d.Body))
		}
		raw, err := os.ReadFile(filepath.Join(dir, "environ"))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for kv := range strings.SplitSeq(strings.TrimSuffix(string(raw), "\x00"), "\x00") {
			k, v, _ := strings.Cut(kv, "=")
			got[k] = v
		}
		want := map[string]string{
			"PATH":                "/usr/bin:/bin",
			"HOME":                "/home/hookbox-test",
			"OUT":                 dir,
			"TARGET_VAR":          "a b=c",
			"HOOKBOX_EVENT_ID":    "evt_123",
			"HOOKBOX_SOURCE":      "stripe",
			"HOOKBOX_EVENT_TYPE":  "invoice.paid",
			"HOOKBOX_ATTEMPT":     "3",
			"HOOKBOX_RECEIVED_AT": "2024-05-06T07:08:09.123456789Z",
		}
		for k, w := range want {
			if g, ok := got[k]; !ok || g != w {
				t.Errorf("env %s=%q (present %v), want %q", k, g, ok, w)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("env has %s=%q, want only %v", k, got[k], slices.Sorted(maps.Keys(want)))
			}
		}
	})

	t.Run("Exit codes", func(t *testing.T) {
		script := mustScript(t, `echo "exiting $1"; exit "$1"`)
		for _, tt := range []struct {
			code      int
			msg       string
			permanent bool
		}{
			{0, "", false},
			{1, "exit status 1", false},
			{3, "exit status 3", false},
			{65, "exit status 65 (permanent failure)", true},
			{75, "exit status 75 (temporary failure)", false},
		} {
			t.Run(strconv.Itoa(tt.code), func(t *testing.T) {
				cmd := handlers.NewCommand([]string{script, strconv.Itoa(tt.code)}, nil, 10*time.Second)
				res, err := cmd.Deliver(context.Background(), testDelivery())
				if res.ExitCode != tt.code {
					t.Errorf("exit code=%d, want %d", res.ExitCode, tt.code)
				}
				if want := "exiting " + strconv.Itoa(tt.code) + "\n"; res.Output != want {
					t.Errorf("output=%q, want %q", res.Output, want)
				}
				if tt.code == 0 {
					if err != nil {
						t.Errorf("err=%v, want nil", err)
					}
					return
				}
				he := mustError(t, err)
				if he.Msg != tt.msg || he.Permanent != tt.permanent {
					t.Errorf("msg=%q permanent=%v, want %q %v", he.Msg, he.Permanent, tt.msg, tt.permanent)
				}
			})
		}
	})

	t.Run("Timeout kills the process group", func(t *testing.T) {
		for _, tt := range []struct{ name, script string }{
			{"Grandchild holding stdout", `sleep 30 & echo $! > "$1"; sleep 30`},
			// The grandchild survives SIGTERM and keeps the output pipe open after the
			// leader dies: only the group SIGKILL after the grace ends it.
			{"Grandchild ignoring SIGTERM", `(trap '' TERM; exec sleep 30) & echo $! > "$1"; sleep 30`},
		} {
			t.Run(tt.name, func(t *testing.T) {
				pidFile := filepath.Join(t.TempDir(), "pid")
				const timeout = 300 * time.Millisecond
				cmd := handlers.NewCommand([]string{mustScript(t, tt.script), pidFile}, nil, timeout)
				start := time.Now()
				res, err := cmd.Deliver(context.Background(), testDelivery())
				elapsed := time.Since(start)
				he := mustError(t, err)
				if he.Msg != "timeout after 300ms" || he.Permanent {
					t.Errorf("msg=%q permanent=%v, want %q false", he.Msg, he.Permanent, "timeout after 300ms")
				}
				if res.ExitCode != -1 {
					t.Errorf("exit code=%d, want -1", res.ExitCode)
				}
				if limit := timeout + grace + time.Second; elapsed < timeout || elapsed > limit {
					t.Errorf("returned after %v, want between %v and %v", elapsed, timeout, limit)
				}
				waitGone(t, mustReadPID(t, pidFile), time.Second)
			})
		}
	})

	t.Run("Leftover group killed after exit", func(t *testing.T) {
		pidFile := filepath.Join(t.TempDir(), "pid")
		cmd := handlers.NewCommand([]string{mustScript(t, `sleep 30 >/dev/null 2>&1 & echo $! > "$1"`), pidFile}, nil, 10*time.Second)
		if _, err := cmd.Deliver(context.Background(), testDelivery()); err != nil {
			t.Fatalf("Deliver: err=%v, want nil", err)
		}
		waitGone(t, mustReadPID(t, pidFile), time.Second)
	})

	t.Run("Context cancel kills", func(t *testing.T) {
		pidFile := filepath.Join(t.TempDir(), "pid")
		cmd := handlers.NewCommand([]string{mustScript(t, `echo $$ > "$1"; exec sleep 30`), pidFile}, nil, time.Minute)
		ctx, cancel := context.WithCancel(context.Background())
		timer := time.AfterFunc(300*time.Millisecond, cancel)
		defer timer.Stop()
		start := time.Now()
		_, err := cmd.Deliver(ctx, testDelivery())
		he := mustError(t, err)
		if !errors.Is(err, context.Canceled) || he.Msg != "canceled" {
			t.Errorf("err=%v msg=%q, want context.Canceled %q", err, he.Msg, "canceled")
		}
		if limit := grace + 2*time.Second; time.Since(start) > limit {
			t.Errorf("returned after %v, want within %v", time.Since(start), limit)
		}
		waitGone(t, mustReadPID(t, pidFile), time.Second)
	})

	t.Run("Huge output is bounded", func(t *testing.T) {
		script := mustScript(t, `echo out; echo err >&2; yes | head -c 3000000; echo; echo END`)
		res, err := handlers.NewCommand([]string{script}, nil, 10*time.Second).Deliver(context.Background(), testDelivery())
		if err != nil {
			t.Fatalf("Deliver: err=%v, want nil", err)
		}
		if len(res.Output) > 4<<10+100 {
			t.Errorf("len(output)=%d, want <= %d", len(res.Output), 4<<10+100)
		}
		if !strings.HasPrefix(res.Output, "out\nerr\ny\ny\n") || !strings.HasSuffix(res.Output, "y\n\nEND\n") {
			t.Errorf("output=%.20q…%q, want head %q and tail %q", res.Output, res.Output[max(0, len(res.Output)-20):], "out\nerr\ny\n", "END\n")
		}
		if want := "[" + strconv.Itoa(8+3000000+1+4-4096) + " bytes omitted]"; !strings.Contains(res.Output, want) {
			t.Errorf("output lacks marker %q", want)
		}
	})

	t.Run("Missing executable", func(t *testing.T) {
		for _, name := range []string{filepath.Join(t.TempDir(), "no-such-program"), "hookbox-no-such-program"} {
			res, err := handlers.NewCommand([]string{name}, nil, time.Second).Deliver(context.Background(), testDelivery())
			he := mustError(t, err)
			if !strings.Contains(he.Msg, "not found") || !strings.Contains(he.Msg, name) || he.Permanent {
				t.Errorf("msg=%q permanent=%v, want a retried \"not found\" naming %q", he.Msg, he.Permanent, name)
			}
			if res.ExitCode != -1 {
				t.Errorf("exit code=%d, want -1", res.ExitCode)
			}
		}
	})

	t.Run("Bad input does not run", func(t *testing.T) {
		d := testDelivery()
		d.EventID = "evt\x00"
		for name, tt := range map[string]struct {
			argv []string
			env  map[string]string
			d    handlers.Delivery
		}{
			"Empty argv":       {nil, nil, testDelivery()},
			"NUL in event id":  {[]string{"/bin/true"}, nil, d},
			"Bad env name":     {[]string{"/bin/true"}, map[string]string{"A=B": "x"}, testDelivery()},
			"Empty program":    {[]string{""}, nil, testDelivery()},
			"NUL in env value": {[]string{"/bin/true"}, map[string]string{"A": "x\x00"}, testDelivery()},
		} {
			t.Run(name, func(t *testing.T) {
				_, err := handlers.NewCommand(tt.argv, tt.env, time.Second).Deliver(context.Background(), tt.d)
				if he := mustError(t, err); he.Permanent || he.Msg == "" {
					t.Errorf("msg=%q permanent=%v, want a message and false", he.Msg, he.Permanent)
				}
			})
		}
	})
}

func TestCommand_Run(t *testing.T) {
	dir := t.TempDir()
	script := mustScript(t, `cat > "$OUT/stdin"; echo "$ALERT_KIND"`)
	cmd := handlers.NewCommand([]string{script}, map[string]string{"OUT": dir}, 10*time.Second)
	stdin := []byte(`{"dead":true}`)
	res, err := cmd.Run(context.Background(), map[string]string{"ALERT_KIND": "dead"}, stdin)
	if err != nil {
		t.Fatalf("Run: err=%v, want nil", err)
	}
	if res.Output != "dead\n" {
		t.Errorf("output=%q, want %q", res.Output, "dead\n")
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "stdin")); !bytes.Equal(got, stdin) {
		t.Errorf("stdin=%q, want %q", got, stdin)
	}
}

// BenchmarkCommand_Deliver also reports this process's own CPU a run
// (cpu-µs/op: user+system, the child's excluded): what hookbox spends around
// a fork/exec, which the wall time hides under the child's. The raw case is
// a bare exec.Command("/bin/true").Run(), the floor.
func BenchmarkCommand_Deliver(b *testing.B) {
	b.Run("deliver", func(b *testing.B) {
		cmd := handlers.NewCommand([]string{"/bin/true"}, nil, 10*time.Second)
		d := testDelivery()
		ctx := context.Background()
		b.ReportAllocs()
		before := selfCPU(b)
		for b.Loop() {
			if _, err := cmd.Deliver(ctx, d); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((selfCPU(b)-before).Microseconds())/float64(b.N), "cpu-µs/op")
	})
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		before := selfCPU(b)
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((selfCPU(b)-before).Microseconds())/float64(b.N), "cpu-µs/op")
	})
}

func selfCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
