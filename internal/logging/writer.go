package logging

import (
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// logWriter hands log lines to a goroutine of its own that writes them to
// out, so that a stalled output (a full pipe nobody reads, a paused
// terminal, a journal that is behind) never blocks the request handlers or
// the store's writer, which log as they go. Up to a ring's worth of lines
// wait; further lines are dropped and counted, and once the output takes
// lines again the count is reported through onDropped, on the writing
// goroutine, so it cannot interleave with a line.
//
// zerolog ships such a writer (diode), but the copy in the version used
// here can lose a wake-up (its waiter signals without the lock), leaving a
// line unwritten until the next one comes.
type logWriter struct {
	out       io.Writer
	lines     chan []byte
	dropped   atomic.Int64
	onDropped func(n int64)
	done      chan struct{}

	mu     sync.RWMutex // Write holds it shared; Close, to close lines
	closed bool
}

func newLogWriter(out io.Writer, ring int, onDropped func(n int64)) *logWriter {
	w := &logWriter{out: out, lines: make(chan []byte, ring), onDropped: onDropped, done: make(chan struct{})}
	go w.run()
	return w
}

// Write queues a copy of p (zerolog reuses its buffer) and never blocks.
func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return len(p), nil
	}
	select {
	case w.lines <- append([]byte(nil), p...):
	default:
		w.dropped.Add(1)
	}
	return len(p), nil
}

func (w *logWriter) run() {
	defer close(w.done)
	for line := range w.lines {
		w.out.Write(line)
		if n := w.dropped.Swap(0); n > 0 && w.onDropped != nil {
			w.onDropped(n)
		}
	}
}

// Close writes what is queued, waiting at most wait for a stalled output.
// Lines logged after Close are dropped.
func (w *logWriter) Close(wait time.Duration) {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.lines)
	}
	w.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-w.done:
	case <-t.C:
	}
}
