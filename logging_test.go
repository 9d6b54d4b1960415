package main_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A log output that nobody reads (a pipe whose reader stalled, a paused
// terminal) must not stall the inbox: every request still gets its durable
// 200 and every delivery runs, the lines that did not fit are dropped and
// counted once the output moves again, and serve still stops cleanly.
func TestServe_StalledLogOutputDoesNotStallTheInbox(t *testing.T) {
	bin := buildHookbox(t)
	var delivered atomic.Int64
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		delivered.Add(1)
	}))
	defer sink.Close()

	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := unsignedServeConfig(t, dir, addr, "", fmt.Sprintf(`
[[target]]
name = "sink"
source = "shop"
url = %q
`, sink.URL))

	// The pipe's reader is held open and not read: once its buffer
	// (64 KiB on Linux) is full, every write to it blocks.
	logR, logW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer logR.Close()
	// Debug level: every request and every delivery writes a line.
	p := launchServe(t, addr, &syncBuffer{}, logW, bin, "serve", "--config", cfg, "--log-level", "debug", "--log-format", "json")
	logW.Close() // the child holds its own copy

	// About two lines an event: far more than the pipe and the ring hold.
	const events, senders = 1500, 8
	client := &http.Client{Timeout: 5 * time.Second}
	var wg sync.WaitGroup
	var failed atomic.Int64
	var firstErr atomic.Value
	for s := range senders {
		wg.Go(func() {
			for i := s; i < events; i += senders {
				req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/hooks/shop", strings.NewReader(`{}`))
				req.Header.Set("X-Id", fmt.Sprintf("evt_%d", i))
				resp, err := client.Do(req)
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					return // one stalled request says it all
				}
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d senders of %d stopped on a failed request while the log output was stalled, first: %v", n, senders, firstErr.Load())
	}
	waitFor(t, 20*time.Second, "every event to be delivered while the log output is stalled", func() bool {
		return delivered.Load() >= events
	})

	// The output moves again: what was kept reaches it, with the count of
	// what was not, and SIGTERM still ends serve with status 0.
	logs := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(logR)
		logs <- string(b)
	}()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
		if p.err != nil {
			t.Fatalf("serve exit: %v, want 0", p.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10s of SIGTERM")
	}
	out := <-logs
	var dropped int
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, `"dropped_lines"`) {
			var n int
			if _, err := fmt.Sscanf(l[strings.Index(l, `"dropped_lines":`):], `"dropped_lines":%d`, &n); err != nil {
				t.Fatalf("dropped-lines warning %q: %v", l, err)
			}
			dropped += n
		}
	}
	if dropped == 0 {
		t.Errorf("no dropped-lines warning in the log after %d events at debug level through a stalled output:\n%.2000s", events, out)
	}
	if !strings.Contains(out, `"message":"stopped"`) {
		t.Errorf("the last line (stopped) did not reach the log output:\n%.2000s", out[max(0, len(out)-2000):])
	}
}
