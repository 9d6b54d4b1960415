package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/config"
)

// testMain is a running hookbox on 127.0.0.1:0 with its store in a temp dir.
type testMain struct {
	*Main
	t    testing.TB
	Dir  string
	URL  string // http://127.0.0.1:port
	Logs *syncBuffer
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// MustRunMain starts hookbox with the given config text (without [server]
// listen or [store] path: those are set here). An empty text runs the
// no-config local sink. dir may be "" for a fresh temp dir, or an earlier
// instance's Dir to restart on the same store. Each opt runs on the Main
// before Run, e.g. to inject a clock.
func MustRunMain(tb testing.TB, cfgText, dir string, opts ...func(*Main)) *testMain {
	tb.Helper()
	if dir == "" {
		dir = tb.TempDir()
	}
	var cfg config.Config
	local := strings.TrimSpace(cfgText) == ""
	if local {
		cfg = config.LocalSink()
	} else {
		var err error
		cfg, err = config.Parse("test.toml", []byte(cfgText), os.Getenv)
		if err != nil {
			tb.Fatalf("parse config: %v", err)
		}
	}
	cfg.Server.Listen = "127.0.0.1:0"
	cfg.Store.Path = filepath.Join(dir, "hookbox.db")
	logs := &syncBuffer{}
	m := NewMain(cfg, zerolog.New(logs).Level(zerolog.DebugLevel))
	m.LocalSink = local
	for _, opt := range opts {
		opt(m)
	}
	if err := m.Run(context.Background()); err != nil {
		tb.Fatalf("run: %v", err)
	}
	tm := &testMain{Main: m, t: tb, Dir: dir, URL: "http://" + m.Addr(), Logs: logs}
	tb.Cleanup(func() { tm.Close() })
	return tm
}

// Post sends a webhook and returns the status and body.
func (tm *testMain) Post(path string, headers map[string]string, body []byte) (int, string) {
	tm.t.Helper()
	req, err := http.NewRequest(http.MethodPost, tm.URL+path, bytes.NewReader(body))
	if err != nil {
		tm.t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tm.t.Fatalf("post %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WithNow runs hookbox on a fixed clock.
func WithNow(now time.Time) func(*Main) {
	return func(m *Main) { m.Now = func() time.Time { return now } }
}
