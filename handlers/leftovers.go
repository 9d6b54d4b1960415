package handlers

import (
	"context"

	"github.com/rs/zerolog"

	"hookbox/queue"
)

// Leftover is a process started by a command target attempt that outlived
// the hookbox that ran it (killed with SIGKILL, or crashed): nothing ends
// it at its timeout any more, and the restarted hookbox will run the
// delivery again.
type Leftover struct {
	PID, PGID                        int
	Source, EventID, Target, Replica string // from the attempt's environment

	start uint64 // start time, to tell it from a later process with its pid
}

// KillGrace is how long a command's process group has between SIGTERM and
// SIGKILL, at a timeout, a shutdown or StopLeftovers.
const KillGrace = killGrace

// StopRunningLeftovers ends the processes of command attempts that the
// previous process on store left running when it died without stopping
// them (SIGKILL, a crash): their deliveries are still marked running, as
// running (the store's Running, before the pool starts) lists them, and the
// pool is about to run them again. Processes of finished deliveries (a
// daemon a target started on purpose) are left alone, and so are those of
// another replica than the one a running delivery names (a key without
// one, from a store with one serve at a time, names any). Linux only: it reads
// /proc. store is the store's identity (sqlite.RealPath). It returns
// nothing: what it cannot do, and each process it stops, it logs to log as
// a warning, and the start goes on.
func StopRunningLeftovers(ctx context.Context, store string, running func(context.Context) ([]queue.RunningKey, error), log zerolog.Logger) {
	const lookFailed = "could not look for commands left running by the previous process: one still running would overlap its delivery's rerun"
	procs, err := Leftovers(store)
	if err != nil || len(procs) == 0 {
		if err != nil {
			log.Warn().Err(err).Msg(lookFailed)
		}
		return
	}
	keys, err := running(ctx)
	if err != nil {
		log.Warn().Err(err).Msg(lookFailed)
		return
	}
	held := make(map[queue.RunningKey]bool, len(keys))
	for _, k := range keys {
		held[k] = true
	}
	var stale []Leftover
	for _, p := range procs {
		k := queue.RunningKey{Source: p.Source, EventID: p.EventID, Target: p.Target}
		if held[k] {
			stale = append(stale, p)
			continue
		}
		if k.Replica = p.Replica; k.Replica != "" && held[k] {
			stale = append(stale, p)
		}
	}
	if len(stale) == 0 {
		return
	}
	for _, p := range stale {
		log.Warn().Int("pid", p.PID).Str("source", p.Source).Str("event_id", p.EventID).Str("target", p.Target).
			Msg("stopping a command left running by the previous process, before its delivery runs again")
	}
	StopLeftovers(stale, KillGrace)
}
