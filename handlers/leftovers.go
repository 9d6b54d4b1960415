package handlers

// Leftover is a process started by a command target attempt that outlived
// the hookbox that ran it (killed with SIGKILL, or crashed): nothing ends
// it at its timeout any more, and the restarted hookbox will run the
// delivery again.
type Leftover struct {
	PID, PGID               int
	Source, EventID, Target string // from the attempt's environment

	start uint64 // start time, to tell it from a later process with its pid
}

// KillGrace is how long a command's process group has between SIGTERM and
// SIGKILL, at a timeout, a shutdown or StopLeftovers.
const KillGrace = killGrace
