package handlers_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"hookbox/handlers"
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
