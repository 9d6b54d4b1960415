// Package replica gives a running hookbox serve its identity among the
// replicas that share one store, and tells whether another replica's
// process is provably gone: on the same machine, no longer running. A
// store engine records the replica with each claim, so that a starting
// serve takes back at once only what its stopped predecessors left
// running, and leaves what a live replica holds to that replica (or to its
// lease).
package replica

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
)

// Process identifies one run of one hookbox process.
type Process struct {
	// ID names the replica in claims, logs and its commands' environment
	// (HOOKBOX_REPLICA): host, pid and random hex, new at each start.
	ID   string
	Host string
	PID  int
	// Boot and PIDNS are the kernel's boot id and the process's pid
	// namespace, Start its start time in clock ticks after boot: with
	// them, a pid seen again names the same process only if all agree.
	// Empty (and 0) where the system does not tell (not Linux): such a
	// process is never provably gone.
	Boot  string
	PIDNS string
	Start uint64
}

// Self is the identity of this process, with a fresh random part.
func Self() (Process, error) {
	host, err := os.Hostname()
	if err != nil {
		return Process{}, fmt.Errorf("replica identity: %w", err)
	}
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return Process{}, fmt.Errorf("replica identity: %w", err)
	}
	p := Process{Host: host, PID: os.Getpid()}
	p.ID = fmt.Sprintf("%s-%d-%s", host, p.PID, hex.EncodeToString(b))
	p.Boot, p.PIDNS, p.Start = self(p.PID)
	return p, nil
}

// Gone reports whether other, seen from p, is provably no longer running:
// it ran on p's machine, under p's kernel boot or an earlier one, in p's
// pid namespace, and its pid is free now or names a process started at
// another time. A process on another machine, or in another container's
// pid namespace, is never provably gone: what it holds is taken over when
// its lease runs out.
func (p Process) Gone(other Process) bool {
	if other.ID == p.ID {
		return false
	}
	if other.Host != p.Host || p.Boot == "" || other.Boot == "" || other.PIDNS != p.PIDNS {
		return false
	}
	if other.Boot != p.Boot {
		return true // the machine restarted since
	}
	start, running := started(other.PID)
	return !running || start != other.Start
}
