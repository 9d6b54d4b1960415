package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"hookbox/bench"
	"hookbox/config"
	"hookbox/internal/cli"
)

// benchCmd is `hookbox bench`: its flags are bench.Options, and bench.Run
// measures a real hookbox against a bare HTTP server, each run as a child
// process (`hookbox bench-server`) on loopback, in alternating rounds.
type benchCmd struct {
	cli.Env
	// serverArgv starts a bench server (followed by "bench-server" and its
	// flags); serverEnv is added to its environment. Default: this executable.
	serverArgv []string
	serverEnv  []string
}

const benchSummary = "measure ingest, end-to-end delivery and command targets against a bare server"

// BenchCommand is `hookbox bench`.
type BenchCommand struct{ cli.Env }

func (c *BenchCommand) Run(ctx context.Context, args []string) error {
	return (&benchCmd{Env: c.Env}).run(ctx, args)
}

func (b *benchCmd) run(ctx context.Context, args []string) error {
	o := bench.DefaultOptions()
	fs := cli.NewFlagSet(b.Env, "bench", "", benchSummary)
	fs.StringVar(&o.Mode, "mode", o.Mode, "`MODE`: ingest, e2e (to a local URL sink), command (/bin/true target) or rate (fixed request rate)")
	fs.IntVar(&o.Conns, "conns", o.Conns, "`N` concurrent keep-alive connections")
	fs.DurationVar(&o.Duration, "duration", o.Duration, "load `TIME` per server per round")
	fs.IntVar(&o.Rounds, "rounds", o.Rounds, "`N` rounds; each runs every server once, in turn")
	fs.Float64Var(&o.Rate, "rate", o.Rate, "`N` requests a second in rate mode")
	fs.IntVar(&o.Prefill, "prefill", o.Prefill, "ingest and rate modes: also measure a store holding `N` events")
	fs.IntVar(&o.Backlog, "backlog", o.Backlog, "e2e mode: `N` queued deliveries to drain")
	fs.IntVar(&o.BodySize, "body-size", o.BodySize, "request body size in `BYTES` (at least the ~330 of the JSON skeleton)")
	fs.IntVar(&o.Workers, "workers", o.Workers, "`N` delivery workers (e2e, command); also the raw fork/exec concurrency")
	fs.StringVar(&o.Compare, "compare", "", "ingest and rate modes: also load the receiver at `URL` (on loopback) in every round, with the same requests")
	fs.IntVar(&o.ComparePID, "compare-pid", 0, "the --compare receiver's process `ID`, to measure its CPU and memory too")
	fs.StringVar(&o.Order, "order", "none", "e2e mode: the sink target's `ORDER` (none, fifo, latest, coalesce)")
	fs.IntVar(&o.Keys, "keys", o.Keys, "e2e mode with --order: spread the backlog over `N` order keys (1: one hot key)")
	fs.BoolVar(&o.JSON, "json", false, "one JSON object a line instead of tables")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the last round's hookbox server to `FILE` (e2e: the hookbox+url server; the backlog drain's to FILE.backlog)")
	fs.Explain(`Every server runs as a child process on loopback, in alternating rounds; the
ratios within a run are what it measures. Stores go under $TMPDIR: set it to
the disk you mean to measure. BENCHMARKS.md has the figures and bench/wrk.sh
runs the same load with wrk. --compare puts another receiver in the same
rounds: each request is a GitHub push of --body-size bytes, a fresh
X-GitHub-Delivery each, signed in X-Hub-Signature-256 with the secret
` + "\"" + `hookbox-bench-secret` + "\"" + `; a 200 counts as an answer.`)
	if err := fs.Parse(args, 0); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return cli.Usagef("bench: %v", err)
	}
	// A flag the mode does not use would be ignored: say so instead.
	modes := map[string][]string{
		"rate": {bench.ModeRate}, "prefill": {bench.ModeIngest, bench.ModeRate}, "backlog": {bench.ModeE2E},
		"workers": {bench.ModeE2E, bench.ModeCommand}, "conns": {bench.ModeIngest, bench.ModeRate, bench.ModeE2E},
		"compare": {bench.ModeIngest, bench.ModeRate}, "compare-pid": {bench.ModeIngest, bench.ModeRate},
		"order": {bench.ModeE2E}, "keys": {bench.ModeE2E},
	}
	var unused error
	fs.Visit(func(f *flag.Flag) {
		if want, ok := modes[f.Name]; ok && unused == nil && !slices.Contains(want, o.Mode) {
			unused = cli.Usagef("bench: --%s applies to --mode %s, not %s", f.Name, strings.Join(want, " or "), o.Mode)
		}
	})
	if unused != nil {
		return unused
	}
	o.ServerArgv, o.ServerEnv = b.serverArgv, b.serverEnv
	if o.ServerArgv == nil {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("bench: find this executable: %w", err)
		}
		o.ServerArgv = []string{exe}
	}
	if err := bench.Run(ctx, o, b.Stdout, b.Stderr); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// benchServer is the hidden `hookbox bench-server` that `hookbox bench`
// starts as a child: it serves on loopback, prints "listening on http://ADDR",
// and shuts down when its stdin closes or on SIGINT/SIGTERM (bench.Serve).
const benchServerSummary = "a server for hookbox bench to measure (bare, or hookbox)"

// BenchServerCommand is `hookbox bench-server`, a child of hookbox bench.
type BenchServerCommand struct{ cli.Env }

func (c *BenchServerCommand) Run(ctx context.Context, args []string) error {
	fs := cli.NewFlagSet(c.Env, "bench-server", "", benchServerSummary)
	kind := fs.String("kind", "", "bare or hookbox")
	cfgPath := fs.String("config", "", "hookbox: config file")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the serving time to this file")
	if err := fs.Parse(args, 0); err != nil {
		return err
	}
	var start bench.StartFunc
	switch *kind {
	case "bare":
		start = bench.StartBare
	case "hookbox":
		if *cfgPath == "" {
			return cli.Usagef("bench-server: --config is required with --kind hookbox")
		}
		start = func(ctx context.Context) (string, func() error, error) {
			cfg, err := config.Load(*cfgPath, c.Getenv)
			if err != nil {
				return "", nil, err
			}
			if err := bench.CheckLoopback("http://" + cfg.Server.Listen); err != nil {
				return "", nil, fmt.Errorf("bench-server: listen: %w", err)
			}
			m := NewMain(cfg, zerolog.New(c.Stderr).Level(zerolog.WarnLevel).With().Timestamp().Logger())
			m.ShareListener = true // the bench reads /metrics where it sends
			if err := m.Run(ctx); err != nil {
				return "", nil, err
			}
			return m.Addr(), m.Close, nil
		}
	default:
		return cli.Usagef("bench-server: --kind %q: want bare or hookbox", *kind)
	}
	return bench.Serve(ctx, start, *cpuprofile, c.Stdin, c.Stdout)
}
