package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/bench"
	"hookbox/internal/cli"
)

// TestBenchServerChild is not a test: it is the bench server that
// TestBench starts by running this test binary again.
func TestBenchServerChild(t *testing.T) {
	if os.Getenv("HOOKBOX_BENCH_CHILD") != "1" {
		t.Skip("runs only as a child of TestBench")
	}
	if err := Execute(context.Background(), cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func TestBench(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers and loads them; skipped with -short")
	}
	tests := []struct {
		name    string
		args    []string
		servers []string // rows expected in the round table
		key     string   // a value that must be above 0 for every row
	}{
		{"Ingest", []string{"--mode", "ingest", "--conns", "4", "--prefill", "500"}, []string{"bare", "hookbox", "hookbox+prefill"}, "acks_per_s"},
		{"Rate", []string{"--mode", "rate", "--conns", "4", "--rate", "200"}, []string{"bare", "hookbox", "fsync"}, "acks_per_s"},
		{"EndToEnd", []string{"--mode", "e2e", "--conns", "4", "--backlog", "1000"}, []string{"hookbox", "hookbox+url", "backlog"}, ""},
		{"Command", []string{"--mode", "command"}, []string{"fork/exec", "hookbox+command"}, "per_s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			env := cli.Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: os.Getenv}
			b := &benchCmd{
				Env:        env,
				serverArgv: []string{os.Args[0], "-test.run=^TestBenchServerChild$", "--"},
				serverEnv:  []string{"HOOKBOX_BENCH_CHILD=1"},
			}
			args := append([]string{"--duration", "300ms", "--rounds", "1", "--json"}, tt.args...)
			var profile string
			if tt.name == "EndToEnd" {
				profile = filepath.Join(t.TempDir(), "e2e.pprof")
				args = append(args, "--cpuprofile", profile)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := b.run(ctx, args); err != nil {
				t.Fatalf("bench %v: %v\nstderr:\n%s", args, err, stderr.String())
			}
			if stderr.Len() == 0 {
				t.Errorf("no progress lines on stderr")
			}
			// e2e profiles the hookbox+url server to FILE and the drain to FILE.backlog.
			for _, p := range []string{profile, profile + ".backlog"} {
				if profile == "" {
					break
				}
				if b, err := os.ReadFile(p); err != nil || !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
					t.Errorf("profile %s: %d bytes, %v; want a gzipped pprof profile", p, len(b), err)
				}
			}
			got := map[string]map[string]any{}
			maxDepth := -1.0
			for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
				var v map[string]any
				if err := json.Unmarshal([]byte(line), &v); err != nil {
					t.Fatalf("line %q is not JSON: %v", line, err)
				}
				switch v["type"] {
				case "round":
					got[v["server"].(string)] = v
				case "queue_depth":
					samples, _ := v["samples"].([]any)
					for _, sm := range samples {
						if pair, ok := sm.([]any); ok && len(pair) == 2 {
							maxDepth = max(maxDepth, pair[1].(float64))
						}
					}
				}
			}
			// Accepted events outrun the deliveries while the load runs.
			if tt.name == "EndToEnd" && !(maxDepth > 0) {
				t.Errorf("e2e queue depth samples peak at %v, want a queue that grew (> 0):\n%s", maxDepth, stdout.String())
			}
			for _, s := range tt.servers {
				row, ok := got[s]
				if !ok {
					t.Errorf("no round row for %s in:\n%s", s, stdout.String())
					continue
				}
				keys := []string{tt.key}
				switch s {
				case "hookbox+url":
					keys = []string{"acks_per_s", "delivered_per_s"}
				case "backlog":
					keys = []string{"per_s", "cpu_us_per_ack", "sink_cpu_us", "writes_per_commit"}
				case "hookbox+command":
					keys = []string{"per_s", "writes_per_commit"}
				case "fsync":
					keys = []string{"p50_ms", "p99_ms"}
				case "hookbox", "hookbox+prefill":
					keys = []string{"acks_per_s", "p99_ms", "rss_mib", "wal_mib"}
				}
				for _, k := range keys {
					if n, _ := row[k].(float64); !(n > 0) {
						t.Errorf("%s %s=%v, want > 0", s, k, row[k])
					}
				}
			}
			if tt.name == "EndToEnd" && !strings.Contains(stdout.String(), "fully busy would drain at most") {
				t.Errorf("e2e run has no note on the machine's bound for the drain:\n%s", stdout.String())
			}
			if drain := got["backlog"]; drain != nil && runtime.GOOS == "linux" {
				if idle, ok := drain["idle_pct"].(float64); !ok || idle < 0 || idle > 100 {
					t.Errorf("backlog idle_pct=%v, want the machine's idle share during the drain (0–100)", drain["idle_pct"])
				}
			}
			if tt.name == "Rate" {
				// 200 a second for 0.3 s: an open loop sends about 60, never
				// as many as the closed loop would.
				for _, s := range []string{"bare", "hookbox"} {
					if _, ok := got[s]["dropped"]; !ok {
						t.Errorf("%s: no dropped count in rate mode", s)
					}
					if n, _ := got[s]["lag_p99_ms"].(float64); !(n > 0) {
						t.Errorf("%s: lag_p99_ms=%v, want the generator's send lag (> 0)", s, got[s]["lag_p99_ms"])
					}
					if n, _ := got[s]["acks"].(float64); n > 1.5*200*0.3 {
						t.Errorf("%s: %v acks at 200/s for 0.3 s: the rate was not applied", s, n)
					}
				}
			}
			if len(got) != len(tt.servers) {
				t.Errorf("rows for %d servers, want %d:\n%s", len(got), len(tt.servers), stdout.String())
			}
		})
	}

	t.Run("Table", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		env := cli.Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: os.Getenv}
		b := &benchCmd{Env: env, serverArgv: []string{os.Args[0], "-test.run=^TestBenchServerChild$", "--"}, serverEnv: []string{"HOOKBOX_BENCH_CHILD=1"}}
		if err := b.run(context.Background(), []string{"--duration", "200ms", "--rounds", "2", "--conns", "2"}); err != nil {
			t.Fatalf("bench: %v\n%s", err, stderr.String())
		}
		out := stdout.String()
		for _, want := range []string{"hookbox bench: mode ingest, 2 connections, 200ms a server, 2 round(s), 1024-byte GitHub-signed bodies, synchronous=full;",
			"acks/s", "p50 ms", "p90 ms", "p99 ms", "RSS MiB", "WAL MiB", "median (min–max)", "acks/s hookbox ÷ bare", "hookbox WAL peak MiB"} {
			if !strings.Contains(out, want) {
				t.Errorf("table lacks %q:\n%s", want, out)
			}
		}
		if n := strings.Count(out, "bare"); n < 3 {
			t.Errorf("bare appears %d times, want 2 rounds and a summary:\n%s", n, out)
		}
		if !regexp.MustCompile(`(?m)^\s*2\s+bare\s`).MatchString(out) {
			t.Errorf("no round 2 row for bare:\n%s", out)
		}
	})
}

func TestBench_Usage(t *testing.T) {
	for _, args := range [][]string{{"--mode", "nope"}, {"--conns", "0"}, {"--duration", "0s"}, {"extra"},
		{"--rounds", "0"}, {"--rate", "0"}, {"--prefill", "-1"}, {"--mode", "e2e", "--backlog", "0"},
		{"--body-size", "-1"}, {"--mode", "e2e", "--workers", "0"},
		// Flags the mode would ignore.
		{"--rate", "500"}, {"--mode", "e2e", "--prefill", "10"}, {"--mode", "rate", "--backlog", "10"},
		{"--workers", "8"}, {"--mode", "command", "--conns", "8"}} {
		var out bytes.Buffer
		err := Execute(context.Background(), cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: os.Getenv}, append([]string{"bench"}, args...))
		var ue *cli.UsageError
		if !errors.As(err, &ue) {
			t.Errorf("bench %v: err=%v, want a usage error", args, err)
			continue
		}
		// The error names the flag at fault (the last one given).
		if n := len(args); n >= 2 && strings.HasPrefix(args[n-2], "--") && !strings.Contains(err.Error(), args[n-2]) {
			t.Errorf("bench %v: %v, want the error to name %s", args, err, args[n-2])
		}
	}
}

// A --cpuprofile that cannot be written fails before any round runs.
func TestBench_CPUProfileUnwritable(t *testing.T) {
	var out bytes.Buffer
	start := time.Now()
	err := Execute(context.Background(), cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: os.Getenv}, []string{"bench", "--duration", "1h", "--cpuprofile", "/nonexistent-dir/p.pprof"})
	if err == nil || !strings.Contains(err.Error(), "--cpuprofile") {
		t.Fatalf("err=%v, want one naming --cpuprofile", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s: the rounds ran before the profile path was checked", d)
	}
}

// --compare loads another receiver in the same rounds, with requests it can
// verify as GitHub's, and says how hookbox compares with it.
func TestBench_Compare(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers and loads them; skipped with -short")
	}
	var valid, invalid atomic.Int64
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m := hmac.New(sha256.New, []byte(bench.Secret))
		m.Write(body)
		if hmac.Equal([]byte(r.Header.Get("X-Hub-Signature-256")), []byte("sha256="+hex.EncodeToString(m.Sum(nil)))) && r.Header.Get("X-GitHub-Delivery") != "" {
			valid.Add(1)
			return
		}
		invalid.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer peer.Close()

	var stdout, stderr bytes.Buffer
	b := &benchCmd{
		Env:        cli.Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: os.Getenv},
		serverArgv: []string{os.Args[0], "-test.run=^TestBenchServerChild$", "--"},
		serverEnv:  []string{"HOOKBOX_BENCH_CHILD=1"},
	}
	args := []string{"--duration", "300ms", "--rounds", "1", "--conns", "4", "--json",
		"--compare", peer.URL + "/hooks/github", "--compare-pid", strconv.Itoa(os.Getpid())}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := b.run(ctx, args); err != nil {
		t.Fatalf("bench %v: %v\nstderr:\n%s", args, err, stderr.String())
	}
	var row map[string]any
	var notes []any
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("line %q is not JSON: %v", line, err)
		}
		switch {
		case v["type"] == "round" && v["server"] == "compare":
			row = v
		case v["type"] == "run":
			notes, _ = v["notes"].([]any)
		}
	}
	if row == nil {
		t.Fatalf("no compare row in:\n%s", stdout.String())
	}
	if acks, _ := row["acks"].(float64); acks <= 0 || int64(acks) != valid.Load() {
		t.Errorf("compare row counts %v acks; the receiver verified %d requests", row["acks"], valid.Load())
	}
	if invalid.Load() != 0 {
		t.Errorf("%d requests to the compared receiver did not verify as GitHub's", invalid.Load())
	}
	if us, _ := row["cpu_us_per_ack"].(float64); us <= 0 {
		t.Errorf("compare row cpu_us_per_ack = %v, want the --compare-pid process's CPU", row["cpu_us_per_ack"])
	}
	if !strings.Contains(fmt.Sprint(notes), "acks/s hookbox ÷ compare") {
		t.Errorf("notes %v do not compare hookbox with the receiver", notes)
	}
}
