// Package logging builds serve's logger: zerolog, JSON or console, written
// to its output through a goroutine of its own so that an output that
// stalls never stalls the request handlers or the store's writer.
package logging

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"
)

// ring is how many log lines may wait for a stalled log output before
// further ones are dropped; flushWait bounds how long the exit waits for the
// output to take what is left.
const (
	ring      = 1024
	flushWait = 2 * time.Second
)

// New returns a logger on w at level ("debug", "info", "warn", "error") in
// format ("json", "console", or "auto": console on a terminal), and the
// function that flushes it at exit. Lines reach w through a goroutine of
// their own: the request handlers and the store's single writer log as they
// go, and an output that stalls (a full pipe nobody reads, a paused
// terminal, a journal that is behind) must not stall them, or acks and
// commits would wait for the log. When ring lines are waiting, further ones
// are dropped, and a warning says how many once the output takes lines
// again (logWriter). The error names the flag whose value is wrong.
func New(w io.Writer, level, format string) (zerolog.Logger, func(), error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Logger{}, nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	switch format {
	case "json":
	case "console":
		// Colours only on a terminal: in a file they are escape codes.
		f, ok := w.(*os.File)
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339, NoColor: !ok || !IsTerminal(f)}
	case "auto":
		if f, ok := w.(*os.File); ok && IsTerminal(f) {
			w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339}
		}
	default:
		return zerolog.Logger{}, nil, fmt.Errorf("--log-format %q: want json, console or auto", format)
	}
	direct := zerolog.New(w).With().Timestamp().Logger()
	lw := newLogWriter(w, ring, func(n int64) {
		direct.Warn().Int64("dropped_lines", n).Msg("the log output was not keeping up, so log lines were dropped: check what reads hookbox's stderr (the journal, a pipe)")
	})
	return zerolog.New(lw).Level(lvl).With().Timestamp().Logger(), func() { lw.Close(flushWait) }, nil
}

// IsTerminal reports whether f is a character device (a terminal).
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Lines returns a writer that hands each Write to w on a goroutine of its
// own, as the logger does, so that a stalled w never blocks its caller;
// and the function that flushes it at exit.
func Lines(w io.Writer) (io.Writer, func()) {
	lw := newLogWriter(w, ring, func(n int64) { fmt.Fprintf(w, "(%d lines dropped: the output was not keeping up)\n", n) })
	return lw, func() { lw.Close(flushWait) }
}
