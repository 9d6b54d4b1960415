package handlers_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/handlers"
	"hookbox/queue"
)

// startMarked starts sh -c script in a process group of its own with a
// command target's environment, as hookbox would, and reaps it when it ends.
func startMarked(t *testing.T, store, script string) (*exec.Cmd, chan struct{}) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOOKBOX_STORE=" + store, "HOOKBOX_SOURCE=shop",
		"HOOKBOX_EVENT_ID=evt_1", "HOOKBOX_TARGET=script"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	return cmd, done
}

func TestLeftovers(t *testing.T) {
	store := "/nonexistent/" + strconv.Itoa(time.Now().Nanosecond()) + "/hookbox.db"
	// The shell and its sleep both carry the marker; only the shell leads the group.
	mine, mineDone := startMarked(t, store, "sleep 30 & wait")
	// Ignores SIGTERM: only the SIGKILL after the grace ends it.
	ready := filepath.Join(t.TempDir(), "trapped")
	stubborn, stubbornDone := startMarked(t, store, `trap "" TERM; : > '`+ready+`'; while :; do sleep 0.05; done`)
	other, otherDone := startMarked(t, store+"-other", "sleep 30")

	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatal("the SIGTERM-ignoring shell never set its trap")
		}
	}
	sleepOfMine := func(p handlers.Leftover) bool { return p.PGID == mine.Process.Pid && p.PID != mine.Process.Pid }
	var procs []handlers.Leftover
	deadline := time.Now().Add(5 * time.Second)
	for {
		var err error
		if procs, err = handlers.Leftovers(store); err != nil {
			t.Fatal(err)
		}
		// Until mine's sleep has started (or the time is up: the checks below say what is missing).
		if slices.ContainsFunc(procs, sleepOfMine) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	pids := map[int]handlers.Leftover{}
	for _, p := range procs {
		pids[p.PID] = p
		if p.Source != "shop" || p.EventID != "evt_1" || p.Target != "script" {
			t.Errorf("leftover %+v: want source shop, event evt_1, target script from its environment", p)
		}
	}
	for _, c := range []*exec.Cmd{mine, stubborn} {
		p, ok := pids[c.Process.Pid]
		if !ok {
			t.Fatalf("pid %d (HOOKBOX_STORE=%s) not listed in %+v", c.Process.Pid, store, procs)
		}
		if p.PGID != c.Process.Pid {
			t.Errorf("pid %d: pgid %d, want its own group %d", p.PID, p.PGID, c.Process.Pid)
		}
	}
	if _, ok := pids[other.Process.Pid]; ok {
		t.Errorf("a process of another store was listed: %+v", procs)
	}
	if !slices.ContainsFunc(procs, sleepOfMine) {
		t.Errorf("the shell's sleep (same group, same environment) was not listed: %+v", procs)
	}

	start := time.Now()
	handlers.StopLeftovers(procs, 300*time.Millisecond)
	took := time.Since(start)
	for name, done := range map[string]chan struct{}{"sh with a sleep": mineDone, "sh ignoring SIGTERM": stubbornDone} {
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Errorf("%s still runs after StopLeftovers", name)
		}
	}
	if took < 300*time.Millisecond {
		t.Errorf("StopLeftovers returned after %v, before the grace, although one process ignores SIGTERM", took)
	}
	select {
	case <-otherDone:
		t.Error("the other store's process was stopped too")
	default:
	}
}

// readPID waits for a pid written to path by a test process.
func readPID(t *testing.T, path string) int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			pid, err := strconv.Atoi(string(b[:len(b)-1]))
			if err != nil {
				t.Fatalf("%s: %q", path, b)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", path)
		}
	}
}

func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// A member of the attempt's group that the scan cannot see (it cleared its
// environment) and that ignores SIGTERM still gets the group's SIGKILL; a
// process that left for a session of its own on purpose (setsid) is not a
// leftover and is left running.
func TestLeftovers_HiddenMemberAndEscapedSession(t *testing.T) {
	store := "/nonexistent/" + strconv.Itoa(time.Now().Nanosecond()) + "/hookbox.db"
	dir := t.TempDir()
	hidden, daemon := filepath.Join(dir, "hidden"), filepath.Join(dir, "daemon")
	startMarked(t, store, `env -i /bin/sh -c 'trap "" TERM; echo $$ > `+hidden+`; while :; do sleep 0.05; done' &
setsid /bin/sh -c 'echo $$ > `+daemon+`; exec sleep 30' &
wait`)
	hiddenPID, daemonPID := readPID(t, hidden), readPID(t, daemon)
	t.Cleanup(func() {
		syscall.Kill(hiddenPID, syscall.SIGKILL)
		syscall.Kill(daemonPID, syscall.SIGKILL)
	})
	procs, err := handlers.Leftovers(store)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if p.PID == hiddenPID || p.PID == daemonPID {
			t.Errorf("listed pid %d (hidden %d, daemon %d): %+v", p.PID, hiddenPID, daemonPID, procs)
		}
	}
	if len(procs) == 0 {
		t.Fatal("the marked shell was not listed")
	}
	handlers.StopLeftovers(procs, 300*time.Millisecond)
	for deadline := time.Now().Add(2 * time.Second); !gone(hiddenPID) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !gone(hiddenPID) {
		t.Error("the unlisted group member that ignores SIGTERM still runs after StopLeftovers")
	}
	if gone(daemonPID) {
		t.Error("the process in a session of its own (setsid) was stopped too")
	}
}

// Of two replicas' commands for the same delivery on one store, only
// those of the replica that the running delivery names are stopped: a
// replica starting beside a live one never stops that one's attempts.
func TestStopRunningLeftovers_OnlyTheNamedReplicas(t *testing.T) {
	store := "postgres://u@db:5432/hookbox-" + strconv.Itoa(time.Now().Nanosecond())
	start := func(replica string) chan struct{} {
		t.Helper()
		cmd := exec.Command("/bin/sh", "-c", "sleep 30 & wait")
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOOKBOX_STORE=" + store, "HOOKBOX_SOURCE=shop",
			"HOOKBOX_EVENT_ID=evt_1", "HOOKBOX_TARGET=script", "HOOKBOX_REPLICA=" + replica}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-done })
		return done
	}
	goneDone, liveDone := start("host-1-dead"), start("host-2-live")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		procs, err := handlers.Leftovers(store)
		if err != nil {
			t.Fatal(err)
		}
		if len(procs) >= 4 || time.Now().After(deadline) { // each shell and its sleep
			break
		}
	}
	running := func(context.Context) ([]queue.RunningKey, error) {
		return []queue.RunningKey{{Source: "shop", EventID: "evt_1", Target: "script", Replica: "host-1-dead"}}, nil
	}
	handlers.StopRunningLeftovers(context.Background(), store, running, zerolog.Nop())
	select {
	case <-goneDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the named replica's command still runs")
	}
	select {
	case <-liveDone:
		t.Fatal("the other replica's command was stopped")
	case <-time.After(200 * time.Millisecond):
	}
}
