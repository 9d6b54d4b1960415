package handlers

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// Leftovers lists this user's processes that a command target of store
// started (their environment has HOOKBOX_STORE=store) and that are still
// running: after hookbox itself was killed, nothing ends them. It reads
// /proc; other users' processes are not readable and not listed.
func Leftovers(store string) ([]Leftover, error) {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var out []Leftover
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue // gone, or another user's
		}
		l := Leftover{PID: pid}
		mine := false
		for kv := range bytes.SplitSeq(env, []byte{0}) {
			k, v, _ := bytes.Cut(kv, []byte{'='})
			switch string(k) {
			case "HOOKBOX_STORE":
				mine = string(v) == store
			case "HOOKBOX_SOURCE":
				l.Source = string(v)
			case "HOOKBOX_EVENT_ID":
				l.EventID = string(v)
			case "HOOKBOX_TARGET":
				l.Target = string(v)
			}
		}
		if !mine {
			continue
		}
		pgid, state, ok := procStat(pid)
		if !ok || state == 'Z' {
			continue
		}
		l.PGID = pgid
		out = append(out, l)
	}
	return out, nil
}

// StopLeftovers ends ps and their process groups as a timeout would: SIGTERM,
// then SIGKILL to whatever still runs after grace. It never signals its own
// process group, or group 1.
func StopLeftovers(ps []Leftover, grace time.Duration) {
	own := syscall.Getpgrp()
	signal := func(sig syscall.Signal) {
		for _, p := range ps {
			if p.PGID > 1 && p.PGID != own {
				_ = syscall.Kill(-p.PGID, sig)
			}
			_ = syscall.Kill(p.PID, sig)
		}
	}
	signal(syscall.SIGTERM)
	for deadline := time.Now().Add(grace); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if allGone(ps) {
			return
		}
	}
	signal(syscall.SIGKILL)
}

func allGone(ps []Leftover) bool {
	for _, p := range ps {
		if _, state, ok := procStat(p.PID); ok && state != 'Z' {
			return false
		}
	}
	return true
}

// procStat reads a process's group and state from /proc/PID/stat; ok is
// false once it is gone.
func procStat(pid int) (pgid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// "pid (comm) state ppid pgrp …": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, false
	}
	g, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	return g, f[0][0], true
}
