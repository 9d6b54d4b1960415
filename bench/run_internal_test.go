package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The goal lines apply the thresholds of each mode to the medians of the
// rounds, and say met or not.
func TestRunner_Goals(t *testing.T) {
	row := func(round int, server string, kv ...any) Row {
		v := map[string]float64{}
		for i := 0; i < len(kv); i += 2 {
			v[kv[i].(string)] = kv[i+1].(float64)
		}
		return Row{Round: round, Server: server, Values: v}
	}
	ingest := func(hookbox, p99, rss float64) []Row {
		return []Row{
			row(1, "bare", "acks_per_s", 1000.0),
			row(1, "hookbox", "acks_per_s", hookbox, "p99_ms", p99, "rss_mib", rss, "wal_mib", 4.0),
		}
	}
	tests := []struct {
		name  string
		mode  string
		conns int
		rows  []Row
		want  map[string]bool // goal name → met
	}{
		{"64 conns met", "ingest", 64, ingest(460, 19, 30),
			map[string]bool{"acks/s hookbox ÷ bare": true, "hookbox p99 ms": true, "hookbox RSS MiB": true, "hookbox WAL peak MiB": true}},
		{"64 conns missed", "ingest", 64, ingest(440, 21, 33),
			map[string]bool{"acks/s hookbox ÷ bare": false, "hookbox p99 ms": false, "hookbox RSS MiB": false, "hookbox WAL peak MiB": true}},
		{"256 conns: 0.5 and 64 MiB, no p99 goal", "ingest", 256, ingest(480, 60, 40),
			map[string]bool{"acks/s hookbox ÷ bare": false, "hookbox RSS MiB": true, "hookbox WAL peak MiB": true}},
		{"rate", "rate", 64, []Row{row(1, "hookbox", "p99_ms", 4.9)}, map[string]bool{"hookbox p99 ms": true}},
		{"e2e", "e2e", 64, []Row{
			row(1, "hookbox", "acks_per_s", 1000.0), row(1, "hookbox+url", "delivered_per_s", 390.0), row(1, "backlog", "per_s", 10500.0),
		}, map[string]bool{"delivered/s ÷ ingest acks/s": false, "backlog drain events/s": true}},
		{"command", "command", 64, []Row{row(1, "fork/exec", "per_s", 100.0), row(1, "hookbox+command", "per_s", 80.0)},
			map[string]bool{"command deliveries/s ÷ raw fork/exec": true}},
		{"median of the rounds", "rate", 64, []Row{
			row(1, "hookbox", "p99_ms", 4.0), row(2, "hookbox", "p99_ms", 9.0), row(3, "hookbox", "p99_ms", 6.0),
		}, map[string]bool{"hookbox p99 ms": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &runner{Options: Options{Mode: tt.mode, Conns: tt.conns}, rows: tt.rows}
			got := map[string]bool{}
			for _, g := range b.goals() {
				got[g.name] = g.ok
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("goals met %v, want %v", got, tt.want)
			}
		})
	}
}

// Checking the --cpuprofile path neither truncates a file already there nor
// leaves a new one behind.
func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "old.pprof")
	if err := os.WriteFile(existing, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkWritable(existing); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Errorf("existing file now holds %q, want it untouched", b)
	}
	fresh := filepath.Join(dir, "new.pprof")
	if err := checkWritable(fresh); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fresh); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the check left %s behind (stat: %v)", fresh, err)
	}
	if err := checkWritable(filepath.Join(dir, "missing", "p.pprof")); err == nil {
		t.Error("a path in a missing directory: no error")
	}
}

// A wait for deliveries that times out says why the sink refused them, if
// it did: otherwise the bench would only say how many never arrived.
func TestSinkSaid(t *testing.T) {
	sink, err := StartSink()
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	timeout := errors.New("only 0 of 1 accepted events were delivered")
	if got := sinkSaid(timeout, sink); got != timeout {
		t.Errorf("sinkSaid with nothing refused = %v, want the error as it was", got)
	}
	c, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(sink.URL(), "http://"), "/sink"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /sink HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	c.Read(make([]byte, 1)) // returns once the sink has closed the connection
	got := sinkSaid(timeout, sink)
	if !errors.Is(got, timeout) || !strings.Contains(got.Error(), "the sink refused a request: sink: only Content-Length bodies are read") {
		t.Errorf("sinkSaid = %v, want the timeout and the sink's reason", got)
	}
	if sinkSaid(nil, sink) != nil {
		t.Error("sinkSaid(nil) is not nil")
	}
}
