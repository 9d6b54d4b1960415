package bench_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"hookbox/bench"
)

func TestOptions_Validate(t *testing.T) {
	if err := bench.DefaultOptions().Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	tests := []struct {
		name string
		edit func(*bench.Options)
	}{
		{"mode", func(o *bench.Options) { o.Mode = "nope" }},
		{"conns", func(o *bench.Options) { o.Conns = 0 }},
		{"conns", func(o *bench.Options) { o.Conns = 10001 }},
		{"duration", func(o *bench.Options) { o.Duration = 0 }},
		{"duration", func(o *bench.Options) { o.Duration = 2 * time.Hour }},
		{"rounds", func(o *bench.Options) { o.Rounds = 0 }},
		{"rate", func(o *bench.Options) { o.Rate = 0 }},
		{"prefill", func(o *bench.Options) { o.Prefill = -1 }},
		{"backlog", func(o *bench.Options) { o.Backlog = -1 }},
		{"backlog", func(o *bench.Options) { o.Mode, o.Backlog = bench.ModeE2E, 0 }},
		{"body-size", func(o *bench.Options) { o.BodySize = 1<<20 + 1 }},
		{"workers", func(o *bench.Options) { o.Workers = 0 }},
		{"compare", func(o *bench.Options) { o.Compare = "http://example.com/hooks" }},
		{"compare", func(o *bench.Options) { o.Compare = "http://10.0.0.8:9000/hooks" }},
		{"compare", func(o *bench.Options) { o.Compare = "127.0.0.1:9000" }},
		{"compare", func(o *bench.Options) { o.Mode, o.Compare = bench.ModeE2E, "http://127.0.0.1:9000/" }},
		{"compare-pid", func(o *bench.Options) { o.ComparePID = 42 }},
	}
	for _, tt := range tests {
		o := bench.DefaultOptions()
		tt.edit(&o)
		err := o.Validate()
		var oe *bench.OptionError
		if !errors.As(err, &oe) || oe.Name != tt.name || !strings.HasPrefix(err.Error(), "--"+tt.name+" ") {
			t.Errorf("%+v: err=%v, want an OptionError for %s", o, err, tt.name)
		}
		// Run refuses it before anything runs.
		if err := bench.Run(context.Background(), o, io.Discard, io.Discard); !errors.As(err, &oe) {
			t.Errorf("Run(%+v): err=%v, want the OptionError", o, err)
		}
	}
}

// A bench server prints where it listens, serves, and stops cleanly when
// its stdin closes.
func TestServe(t *testing.T) {
	stdin, closeStdin := io.Pipe()
	stdout, out := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- bench.Serve(context.Background(), bench.StartBare, "", stdin, out) }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), bench.ReadyPrefix)
	if !ok {
		t.Fatalf("first line %q, want %q and the address", line, bench.ReadyPrefix)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Post("http://"+addr+"/hooks/github", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("bare server answered %d, want 200", resp.StatusCode)
	}
	closeStdin.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v, want a clean stop", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its stdin closed")
	}
}
