package logging

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a goroutine-safe output.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// gateWriter blocks every Write until open is closed, then records.
type gateWriter struct {
	open chan struct{}
	mu   sync.Mutex
	b    strings.Builder
}

func (g *gateWriter) Write(p []byte) (int, error) {
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.b.Write(p)
}

func (g *gateWriter) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.b.String()
}

func TestLogWriter(t *testing.T) {
	t.Run("Each line is written without waiting for the next", func(t *testing.T) {
		out := &syncBuffer{}
		w := newLogWriter(out, 16, nil)
		defer w.Close(time.Second)
		for i := range 2000 {
			line := fmt.Sprintf("line %d\n", i)
			w.Write([]byte(line))
			// A lost wake-up leaves the line queued until the next Write.
			for deadline := time.Now().Add(2 * time.Second); !strings.HasSuffix(out.String(), line); time.Sleep(20 * time.Microsecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%q not written within 2s, with no line after it", line)
				}
			}
		}
	})
	t.Run("A stalled output drops and counts, never blocks", func(t *testing.T) {
		out := &gateWriter{open: make(chan struct{})}
		var reported []int64
		var mu sync.Mutex
		w := newLogWriter(out, 4, func(n int64) {
			mu.Lock()
			reported = append(reported, n)
			mu.Unlock()
		})
		done := make(chan struct{})
		go func() {
			for i := range 100 {
				fmt.Fprintf(w, "line %d\n", i)
			}
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Write blocked on a stalled output")
		}
		close(out.open)
		w.Close(2 * time.Second)
		mu.Lock()
		defer mu.Unlock()
		var dropped int64
		for _, n := range reported {
			dropped += n
		}
		kept := strings.Count(out.String(), "\n")
		if dropped == 0 || int64(kept)+dropped != 100 {
			t.Errorf("kept %d lines, reported %d dropped (%v), want some dropped and 100 in all", kept, dropped, reported)
		}
		if !strings.HasPrefix(out.String(), "line 0\n") {
			t.Errorf("output %.40q…: want the first lines kept (the later ones are dropped)", out.String())
		}
	})
	t.Run("Close gives up on a stalled output, and later lines are dropped", func(t *testing.T) {
		out := &gateWriter{open: make(chan struct{})}
		defer close(out.open)
		w := newLogWriter(out, 4, nil)
		w.Write([]byte("stuck\n"))
		start := time.Now()
		w.Close(100 * time.Millisecond)
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("Close took %v on a stalled output, want about its 100ms bound", took)
		}
		if n, err := w.Write([]byte("after close\n")); n != len("after close\n") || err != nil {
			t.Errorf("Write after Close: %d, %v", n, err)
		}
	})
}

// --log-format console into a file or a pipe writes plain text: colour
// escape codes belong on a terminal only.
func TestLogger_ConsoleWithoutTerminalHasNoColour(t *testing.T) {
	var buf syncBuffer
	logger, closeLog, err := New(&buf, "info", "console")
	if err != nil {
		t.Fatal(err)
	}
	logger.Warn().Str("grace", "1s").Msg("attempts still running")
	closeLog()
	out := buf.String()
	if !strings.Contains(out, "attempts still running") || !strings.Contains(out, "grace=1s") {
		t.Fatalf("console log %q, want the message and grace=1s", out)
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("console log to a non-terminal has colour escape codes: %q", out)
	}
}
