package handlers

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// Leftovers lists the processes that a command target of store started
// (their environment has HOOKBOX_STORE=store) and that still run: after
// hookbox itself was killed, nothing ends them. It reads /proc and lists
// only processes of this effective user. A process that put itself in a
// session of its own (setsid: the documented way for a command to outlive
// its attempt on purpose) is not listed, nor is anything in that session.
func Leftovers(store string) ([]Leftover, error) {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self, euid := os.Getpid(), uint32(os.Geteuid())
	var found []Leftover
	var sessions []int        // of found, by index
	escaped := map[int]bool{} // sessions led by a marked process
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 || pid == self {
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Stat("/proc/"+e.Name(), &st); err != nil || st.Uid != euid {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue // gone
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
			case "HOOKBOX_REPLICA":
				l.Replica = string(v)
			}
		}
		if !mine {
			continue
		}
		s, ok := readStat(pid)
		if !ok || s.state == 'Z' {
			continue
		}
		l.PGID, l.start = s.pgid, s.start
		if s.sid == pid {
			escaped[pid] = true
		}
		found, sessions = append(found, l), append(sessions, s.sid)
	}
	out := found[:0]
	for i, l := range found {
		if !escaped[sessions[i]] {
			out = append(out, l)
		}
	}
	return out, nil
}

// StopLeftovers ends ps and their process groups as a timeout would:
// SIGTERM, and SIGKILL to each group once every listed process is gone or
// grace has passed. A process is signalled only while it is still the one
// listed (same start time), and a group only while it has members. It
// never signals its own process group, or group 1.
func StopLeftovers(ps []Leftover, grace time.Duration) {
	own := syscall.Getpgrp()
	groups := map[int]bool{}
	for _, p := range ps {
		if p.PGID > 1 && p.PGID != own {
			groups[p.PGID] = true
		}
	}
	for g := range groups {
		_ = syscall.Kill(-g, syscall.SIGTERM)
	}
	for _, p := range ps {
		if alive(p) {
			_ = syscall.Kill(p.PID, syscall.SIGTERM)
		}
	}
	for deadline := time.Now().Add(grace); time.Now().Before(deadline) && anyAlive(ps); {
		time.Sleep(20 * time.Millisecond)
	}
	// What is left of each group, listed or not (a member that cleared its
	// environment, or forked after the scan), as killGroup does after a
	// command ends. A group number is not handed out again while the
	// group has members.
	for g := range groups {
		_ = syscall.Kill(-g, syscall.SIGKILL)
	}
	for _, p := range ps {
		if alive(p) {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
		}
	}
}

func anyAlive(ps []Leftover) bool {
	for _, p := range ps {
		if alive(p) {
			return true
		}
	}
	return false
}

// alive says whether p still runs: the same process (its start time), not
// a zombie.
func alive(p Leftover) bool {
	s, ok := readStat(p.PID)
	return ok && s.start == p.start && s.state != 'Z'
}

type procStat struct {
	state     byte
	pgid, sid int
	start     uint64 // clock ticks after boot
}

// readStat reads a process's state, group, session and start time from
// /proc/PID/stat; ok is false once it is gone.
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// "pid (comm) state ppid pgrp session … starttime(22nd field) …": comm
	// may hold spaces and parentheses, so fields count from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, false
	}
	pgid, err1 := strconv.Atoi(string(f[2]))
	sid, err2 := strconv.Atoi(string(f[3]))
	start, err3 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return procStat{}, false
	}
	return procStat{state: f[0][0], pgid: pgid, sid: sid, start: start}, true
}
