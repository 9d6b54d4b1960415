package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"hookbox/bench"
	"hookbox/config"
	"hookbox/dedupe"
	"hookbox/internal/cli"
	"hookbox/internal/logging"
	"hookbox/sqlite"
)

// benchSecret signs the benchmark's requests; it guards nothing.
const benchSecret = "hookbox-bench-secret"

// benchCmd is `hookbox bench`: it measures a real hookbox against a bare
// HTTP server, each run as a child process on loopback, in alternating rounds.
type benchCmd struct {
	cli.Env
	// serverArgv starts a bench server (followed by "bench-server" and its
	// flags); serverEnv is added to its environment. Default: this executable.
	serverArgv []string
	serverEnv  []string

	mode       string
	conns      int
	duration   time.Duration
	rounds     int
	rate       float64
	prefill    int
	backlog    int
	bodySize   int
	workers    int
	asJSON     bool
	cpuprofile string

	dir     string
	req     bench.GitHubRequest
	runID   string
	rows    []bench.Row
	depths  []depthSeries
	notes   []string
	metrics *http.Client
	printed time.Time // when progress last wrote a line (not on a terminal)
}

// depthSeries is the queue depth sampled during one end-to-end round.
type depthSeries struct {
	Round   int          `json:"round"`
	Every   float64      `json:"every_s"`
	Samples [][2]float64 `json:"samples"` // [seconds since load start, accepted but not yet delivered]
}

const benchSummary = "measure ingest, end-to-end delivery and command targets against a bare server"

// BenchCommand is `hookbox bench`.
type BenchCommand struct{ cli.Env }

func (c *BenchCommand) Run(ctx context.Context, args []string) error {
	return (&benchCmd{Env: c.Env}).run(ctx, args)
}

func (b *benchCmd) run(ctx context.Context, args []string) error {
	fs := cli.NewFlagSet(b.Env, "bench", "", benchSummary)
	fs.StringVar(&b.mode, "mode", "ingest", "ingest, e2e (to a local URL sink), command (/bin/true target) or rate (fixed request rate)")
	fs.IntVar(&b.conns, "conns", 64, "concurrent keep-alive connections")
	fs.DurationVar(&b.duration, "duration", 5*time.Second, "load time per server per round")
	fs.IntVar(&b.rounds, "rounds", 3, "rounds; each runs every server once, in turn")
	fs.Float64Var(&b.rate, "rate", 1000, "requests a second in rate mode")
	fs.IntVar(&b.prefill, "prefill", 0, "ingest and rate modes: also measure a store holding this many events")
	fs.IntVar(&b.backlog, "backlog", 20000, "e2e mode: queued deliveries to drain")
	fs.IntVar(&b.bodySize, "body-size", 1024, "request body size in bytes (at least the ~330 of the JSON skeleton)")
	fs.IntVar(&b.workers, "workers", 4, "delivery workers (e2e, command); also the raw fork/exec concurrency")
	fs.BoolVar(&b.asJSON, "json", false, "one JSON object a line instead of tables")
	fs.StringVar(&b.cpuprofile, "cpuprofile", "", "write a CPU profile of the last round's hookbox server to this file (e2e: the hookbox+url server; the backlog drain's to FILE.backlog)")
	if err := fs.Parse(args, 0); err != nil {
		return err
	}
	switch {
	case b.mode != "ingest" && b.mode != "e2e" && b.mode != "command" && b.mode != "rate":
		return cli.Usagef("bench: --mode %q: want ingest, e2e, command or rate", b.mode)
	case b.conns < 1 || b.conns > 10000:
		return cli.Usagef("bench: --conns must be 1 to 10000")
	case b.duration <= 0 || b.duration > time.Hour:
		return cli.Usagef("bench: --duration must be above 0 and at most 1h")
	case b.rounds < 1 || b.rounds > 100:
		return cli.Usagef("bench: --rounds must be 1 to 100")
	case b.rate <= 0 || b.rate > 1e6:
		return cli.Usagef("bench: --rate must be above 0 and at most 1000000")
	case b.prefill < 0 || b.backlog < 0:
		return cli.Usagef("bench: --prefill and --backlog must not be negative")
	case b.mode == "e2e" && b.backlog < 1:
		return cli.Usagef("bench: --backlog must be at least 1 in e2e mode")
	case b.bodySize < 0 || b.bodySize > 1<<20:
		return cli.Usagef("bench: --body-size must be 0 to 1048576")
	case b.workers < 1 || b.workers > 256:
		return cli.Usagef("bench: --workers must be 1 to 256")
	}
	// A flag the mode does not use would be ignored: say so instead.
	modes := map[string][]string{
		"rate": {"rate"}, "prefill": {"ingest", "rate"}, "backlog": {"e2e"},
		"workers": {"e2e", "command"}, "conns": {"ingest", "rate", "e2e"},
	}
	var unused error
	fs.Visit(func(f *flag.Flag) {
		if want, ok := modes[f.Name]; ok && unused == nil && !slices.Contains(want, b.mode) {
			unused = cli.Usagef("bench: --%s applies to --mode %s, not %s", f.Name, strings.Join(want, " or "), b.mode)
		}
	})
	if unused != nil {
		return unused
	}
	if b.serverArgv == nil {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("bench: find this executable: %w", err)
		}
		b.serverArgv = []string{exe}
	}
	var err error
	if b.dir, err = os.MkdirTemp("", "hookbox-bench-"); err != nil {
		return fmt.Errorf("bench: create a directory for the stores under $TMPDIR: %w", err)
	}
	defer os.RemoveAll(b.dir)
	if b.cpuprofile != "" {
		// The profile is written by the last round's server: find out now,
		// not after every round has run, that it cannot be.
		if err := checkWritable(b.cpuprofile); err != nil {
			return fmt.Errorf("bench: --cpuprofile: %w", err)
		}
	}
	b.req = bench.NewGitHubRequest(benchSecret, b.bodySize)
	b.runID = strconv.FormatInt(time.Now().UnixNano(), 36)
	b.metrics = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}

	switch b.mode {
	case "ingest", "rate":
		err = b.ingest(ctx)
	case "e2e":
		err = b.endToEnd(ctx)
	case "command":
		err = b.command(ctx)
	}
	b.progress("")
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return b.report()
}

// ingest runs bare and hookbox (and hookbox on a prefilled store) in turn,
// closed loop, or open loop at --rate in rate mode.
func (b *benchCmd) ingest(ctx context.Context) error {
	var prefilled string
	if b.prefill > 0 {
		prefilled = filepath.Join(b.dir, "prefilled", "hookbox.db")
		start := time.Now()
		if err := b.fill(ctx, prefilled, b.prefill, nil); err != nil {
			return err
		}
		b.notes = append(b.notes, fmt.Sprintf("prefilled %d events in %.1fs (shared by every round's hookbox+prefill run)", b.prefill, time.Since(start).Seconds()))
	}
	for r := 1; r <= b.rounds; r++ {
		if err := b.measure(ctx, r, "bare", b.bareArgv(), ""); err != nil {
			return err
		}
		path := b.freshStore(r, "hookbox")
		cfg, err := b.writeConfig(r, "hookbox", path, "")
		if err != nil {
			return err
		}
		if err := b.measure(ctx, r, "hookbox", b.hookboxArgv(cfg, b.profile(r, "")), path); err != nil {
			return err
		}
		if b.mode == "rate" {
			if err := b.syncFloor(ctx, r); err != nil {
				return err
			}
		}
		if prefilled != "" {
			cfg, err := b.writeConfig(r, "prefill", prefilled, "")
			if err != nil {
				return err
			}
			if err := b.measure(ctx, r, "hookbox+prefill", b.hookboxArgv(cfg, ""), prefilled); err != nil {
				return err
			}
		}
	}
	if b.mode == "rate" {
		b.notes = append(b.notes, fmt.Sprintf("fsync: the disk alone, writing and fsyncing a page %.0f times a second, had a p99 of %.2f ms (median of the rounds); every hookbox ack waits for one such fsync",
			b.rate, bench.SpreadOf(bench.Values(b.rows, "fsync", "p99_ms")).Median))
	}
	return nil
}

// endToEnd measures, each round: hookbox ingest alone; hookbox delivering
// every event to a local URL sink while under load; and the drain of a
// prefilled backlog to the same sink.
func (b *benchCmd) endToEnd(ctx context.Context) error {
	sink, err := bench.StartSink()
	if err != nil {
		return err
	}
	defer sink.Close()
	target := fmt.Sprintf("[[target]]\nname = \"sink\"\nsource = \"github\"\nurl = %q\ntimeout = \"10s\"\n", sink.URL())
	for r := 1; r <= b.rounds; r++ {
		path := b.freshStore(r, "ingest")
		cfg, err := b.writeConfig(r, "ingest", path, "")
		if err != nil {
			return err
		}
		if err := b.measure(ctx, r, "hookbox", b.hookboxArgv(cfg, ""), path); err != nil {
			return err
		}

		sink.Reset()
		path = b.freshStore(r, "url")
		cfg, err = b.writeConfig(r, "url", path, target)
		if err != nil {
			return err
		}
		if err := b.measureDelivered(ctx, r, cfg, path, sink); err != nil {
			return sinkSaid(err, sink)
		}

		sink.Reset()
		path = b.freshStore(r, "backlog")
		if err := b.fill(ctx, path, b.backlog, []string{"sink"}); err != nil {
			return err
		}
		cfg, err = b.writeConfig(r, "backlog", path, target)
		if err != nil {
			return err
		}
		argv := b.hookboxArgv(cfg, b.profile(r, ".backlog"))
		if err := b.drain(ctx, r, "backlog", argv, path, b.backlog, true, func(string) int64 {
			n, _ := sink.Counts()
			return n
		}); err != nil {
			return sinkSaid(err, sink)
		}
	}
	// The drain is CPU-bound for the machine as a whole: hookbox and the
	// sink (in this process) share its CPUs. Say what that bound is.
	own := bench.SpreadOf(bench.Values(b.rows, "backlog", "cpu_us_per_ack")).Median
	peer := bench.SpreadOf(bench.Values(b.rows, "backlog", "sink_cpu_us")).Median
	if own+peer > 0 {
		b.notes = append(b.notes, fmt.Sprintf("backlog drain: hookbox %.0f µs + sink %.0f µs of CPU a delivery (medians); %d CPUs fully busy would drain at most %.0f events/s",
			own, peer, cpus(), float64(cpus())*1e6/(own+peer)))
	}
	b.machineNote("backlog")
	return nil
}

// machineNote says how busy the machine's CPUs were during server's drains
// (medians over the rounds): idle time is room the drain left unused;
// softirq and steal are CPU time no process is charged for.
func (b *benchCmd) machineNote(server string) {
	idle := bench.Values(b.rows, server, "idle_pct")
	if len(idle) == 0 {
		return
	}
	b.notes = append(b.notes, fmt.Sprintf("%s drain: the machine's CPUs were %.0f%% idle (with I/O wait), %.0f%% in softirq (interrupt work such as loopback network delivery, charged to no process), %.0f%% stolen by the hypervisor (medians)",
		server, bench.SpreadOf(idle).Median, bench.SpreadOf(bench.Values(b.rows, server, "softirq_pct")).Median,
		bench.SpreadOf(bench.Values(b.rows, server, "steal_pct")).Median))
}

// command compares hookbox running /bin/true for every event of a backlog
// with a plain loop of fork/exec of /bin/true at the same concurrency.
func (b *benchCmd) command(ctx context.Context) error {
	argv := []string{"/bin/true"}
	if _, err := os.Stat(argv[0]); err != nil {
		return fmt.Errorf("command mode needs %s: %w", argv[0], err)
	}
	target := fmt.Sprintf("[[target]]\nname = \"true\"\nsource = \"github\"\ncommand = [%q]\ntimeout = \"30s\"\n", argv[0])
	for r := 1; r <= b.rounds; r++ {
		b.progress(fmt.Sprintf("round %d/%d  fork/exec %s x%d for %s", r, b.rounds, argv[0], b.workers, b.duration))
		n, elapsed, err := bench.ForkExec(ctx, argv, b.workers, b.duration)
		if err != nil {
			return err
		}
		raw := float64(n) / elapsed.Seconds()
		b.rows = append(b.rows, bench.Row{Round: r, Server: "fork/exec", Values: map[string]float64{"per_s": raw, "events": float64(n), "seconds": elapsed.Seconds()}})

		// A backlog the raw rate would clear in --duration.
		events := max(int(raw*b.duration.Seconds()), 50)
		path := b.freshStore(r, "command")
		if err := b.fill(ctx, path, events, []string{"true"}); err != nil {
			return err
		}
		cfg, err := b.writeConfig(r, "command", path, target)
		if err != nil {
			return err
		}
		var polled time.Time
		var done int64
		var scrapeErr error
		if err := b.drain(ctx, r, "hookbox+command", b.hookboxArgv(cfg, b.profile(r, "")), path, events, false, func(addr string) int64 {
			// Poll gently: a scrape runs in the server under test, and
			// the drain is timed from the store, not from these polls.
			if time.Since(polled) < 250*time.Millisecond {
				return done
			}
			polled = time.Now()
			n, err := bench.Counters(ctx, b.metrics, "http://"+addr, "hookbox_delivered_total")
			if err != nil {
				scrapeErr = err
				return done
			}
			done, scrapeErr = n[0], nil
			return done
		}); err != nil {
			if scrapeErr != nil {
				return fmt.Errorf("%w (the last read of its /metrics failed: %v)", err, scrapeErr)
			}
			return err
		}
	}
	b.machineNote("hookbox+command")
	return nil
}

// measure runs one server under load and records its row.
func (b *benchCmd) measure(ctx context.Context, round int, name string, argv []string, store string) error {
	b.progress(fmt.Sprintf("round %d/%d  %s: starting", round, b.rounds, name))
	child, err := bench.StartChild(ctx, argv, b.serverEnv)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	row, st, err := b.load(ctx, round, name, child, store, nil)
	if err != nil {
		child.Stop()
		return err
	}
	if err := child.Stop(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if st.OK == 0 {
		if st.FirstError == "" {
			return fmt.Errorf("%s: no request was answered within --duration %s; use a longer --duration", name, b.duration)
		}
		return fmt.Errorf("%s: no request answered 200 (first error: %s)", name, st.FirstError)
	}
	b.rows = append(b.rows, row)
	return nil
}

// load puts child under the configured load and returns its row, with the
// child's peak RSS, the CPU it used during the load and, for a hookbox on
// the store at path store, the largest its WAL file grew.
func (b *benchCmd) load(ctx context.Context, round int, name string, child *bench.Child, store string, acked *atomic.Int64) (bench.Row, *bench.Stats, error) {
	before, err := bench.ReadProc(child.Pid())
	if err != nil {
		return bench.Row{}, nil, err
	}
	var walPeak atomic.Int64
	stopWAL := func() {}
	if store != "" {
		stopWAL = bench.Every(20*time.Millisecond, func() {
			if fi, err := os.Stat(store + "-wal"); err == nil && fi.Size() > walPeak.Load() {
				walPeak.Store(fi.Size())
			}
		})
	}
	l := bench.Load{
		URL:      "http://" + child.Addr + "/hooks/github",
		Request:  b.req,
		IDPrefix: fmt.Sprintf("%s-%d-%s", b.runID, round, name),
		OK:       acked,
		Conns:    b.conns,
		Duration: b.duration,
		Progress: func(el time.Duration, ok, failed int64) {
			b.progress(fmt.Sprintf("round %d/%d  %-16s %4.1fs/%s  %d acks  %.0f/s  %d errors",
				round, b.rounds, name, el.Seconds(), b.duration, ok, float64(ok)/el.Seconds(), failed))
		},
	}
	if b.mode == "rate" {
		l.Rate = b.rate
	}
	st, err := bench.Run(ctx, l)
	stopWAL()
	if err != nil {
		return bench.Row{}, nil, err
	}
	after, err := bench.ReadProc(child.Pid())
	if err != nil {
		return bench.Row{}, nil, err
	}
	v := map[string]float64{
		"acks_per_s": st.PerSecond(),
		"acks":       float64(st.OK),
		"errors":     float64(st.Failed),
		"rss_mib":    float64(after.HWMKiB) / 1024,
		"cpu_pct":    100 * (after.CPU - before.CPU).Seconds() / st.Elapsed.Seconds(),
	}
	maps.Copy(v, latencyValues(&st.Latency))
	if st.OK > 0 {
		v["cpu_us_per_ack"] = float64((after.CPU - before.CPU).Microseconds()) / float64(st.OK)
	}
	if l.Rate > 0 {
		v["dropped"] = float64(st.Dropped)
		v["lag_p99_ms"] = ms(st.Lag.Percentile(0.99))
	}
	if store != "" {
		v["wal_mib"] = float64(walPeak.Load()) / (1 << 20)
	}
	if st.Failed > 0 {
		b.notes = append(b.notes, fmt.Sprintf("round %d %s: %d errors, first: %s", round, name, st.Failed, st.FirstError))
	}
	return bench.Row{Round: round, Server: name, Values: v}, st, nil
}

// syncFloor records, as the row "fsync", the latency of writing and
// fsyncing a page at the request rate on the stores' disk with no server
// running: the part of a durable ack's latency that is the disk's.
func (b *benchCmd) syncFloor(ctx context.Context, round int) error {
	b.progress(fmt.Sprintf("round %d/%d  fsync: %.0f page writes + fsync a second on the stores' disk", round, b.rounds, b.rate))
	h, err := bench.SyncFloor(ctx, b.dir, b.rate, b.duration)
	if err != nil {
		return err
	}
	b.rows = append(b.rows, bench.Row{Round: round, Server: "fsync", Values: latencyValues(h)})
	return nil
}

// latencyValues is a row's latency columns from h.
func latencyValues(h *bench.Histogram) map[string]float64 {
	return map[string]float64{
		"p50_ms": ms(h.Percentile(0.50)), "p90_ms": ms(h.Percentile(0.90)), "p99_ms": ms(h.Percentile(0.99)), "max_ms": ms(h.Max()),
	}
}

// measureDelivered loads a hookbox that delivers to sink, then waits until
// every accepted event has arrived there, sampling the queue depth: the
// events accepted so far less those the sink has seen, counted here rather
// than scraped from the server, which would do the counting's work while
// it is measured.
func (b *benchCmd) measureDelivered(ctx context.Context, round int, cfg, store string, sink *bench.Sink) error {
	const name = "hookbox+url"
	b.progress(fmt.Sprintf("round %d/%d  %s: starting", round, b.rounds, name))
	child, err := bench.StartChild(ctx, b.hookboxArgv(cfg, b.profile(round, "")), b.serverEnv)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer child.Stop()
	every := max(b.duration/20, 100*time.Millisecond)
	series := depthSeries{Round: round, Every: every.Seconds()}
	var acked atomic.Int64
	start := time.Now()
	stopSampling := bench.Every(every, func() {
		d, _ := sink.Counts()
		series.Samples = append(series.Samples, [2]float64{time.Since(start).Seconds(), float64(max(acked.Load()-d, 0))})
	})
	row, st, err := b.load(ctx, round, name, child, store, &acked)
	if err != nil {
		stopSampling()
		return err
	}
	loadEnd := time.Now()
	wait, cancel := context.WithTimeout(ctx, b.deliveryTimeout())
	defer cancel()
	all := bench.WaitFor(wait, func() bool {
		d, _ := sink.Counts()
		if d < st.OK {
			b.progress(fmt.Sprintf("round %d/%d  %s: %d of %d accepted events delivered", round, b.rounds, name, d, st.OK))
		}
		return d >= st.OK
	})
	stopSampling()
	delivered, last := sink.Counts()
	if !all {
		return fmt.Errorf("%s: only %d of %d accepted events were delivered within %s of the load's end (60s + 10 × --duration)%s",
			name, delivered, st.OK, b.deliveryTimeout(), serverSaid(child))
	}
	row.Values["delivered_per_s"] = float64(delivered) / last.Sub(start).Seconds()
	row.Values["drain_s"] = max(last.Sub(loadEnd).Seconds(), 0)
	if ps, err := bench.ReadProc(child.Pid()); err == nil {
		row.Values["rss_mib"] = float64(ps.HWMKiB) / 1024
	}
	if err := child.Stop(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	b.rows = append(b.rows, row)
	b.depths = append(b.depths, series)
	return nil
}

// drain starts a hookbox on the store at path, holding a backlog of events
// deliveries, and waits until count says all are delivered; the rate is
// events over the time from the first attempt's start to the last one's end,
// as the store recorded them.
func (b *benchCmd) drain(ctx context.Context, round int, name string, argv []string, path string, events int, sinkHere bool, count func(addr string) int64) error {
	b.progress(fmt.Sprintf("round %d/%d  %s: draining %d events", round, b.rounds, name, events))
	start := time.Now()
	child, err := bench.StartChild(ctx, argv, b.serverEnv)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer child.Stop()
	atStart, selfStart, err := procUsage(child)
	if err != nil {
		return fmt.Errorf("%s: %w%s", name, err, serverSaid(child))
	}
	machineStart, machineErr := bench.ReadMachineCPU() // Linux only; else left out
	wait, cancel := context.WithTimeout(ctx, b.deliveryTimeout())
	defer cancel()
	var n int64
	ok := bench.WaitFor(wait, func() bool {
		n = count(child.Addr)
		b.progress(fmt.Sprintf("round %d/%d  %s: %d of %d delivered  %.1fs", round, b.rounds, name, n, events, time.Since(start).Seconds()))
		return n >= int64(events)
	})
	if !ok {
		hint := "lower --backlog or raise --duration on a slow machine"
		if name != "backlog" {
			hint = "the backlog is what the raw fork/exec loop ran in --duration; see what the server said"
		}
		return fmt.Errorf("%s: only %d of %d deliveries done within %s (60s + 10 × --duration; %s)%s",
			name, n, events, b.deliveryTimeout(), hint, serverSaid(child))
	}
	// The drain's end: read the usage now, before the scrape and the stop.
	ps, self, err := procUsage(child)
	if err != nil {
		return fmt.Errorf("%s: %w%s", name, err, serverSaid(child))
	}
	machine, machineEndErr := bench.ReadMachineCPU()
	commits, err := bench.Counters(ctx, b.metrics, "http://"+child.Addr, "hookbox_store_commits_total", "hookbox_store_writes_total")
	if err != nil {
		return fmt.Errorf("%s: %w%s", name, err, serverSaid(child))
	}
	if err := child.Stop(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	first, last, err := attemptSpan(ctx, path)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	secs := last.Sub(first).Seconds()
	row := bench.Row{Round: round, Server: name, Values: map[string]float64{
		"per_s": float64(events) / secs, "events": float64(events), "seconds": secs,
		"rss_mib": float64(ps.HWMKiB) / 1024, "cpu_us_per_ack": float64((ps.CPU - atStart.CPU).Microseconds()) / float64(events),
		"writes_per_commit": float64(commits[1]) / float64(max(commits[0], 1)),
	}}
	if machineErr == nil && machineEndErr == nil {
		row.Values["idle_pct"], row.Values["softirq_pct"], row.Values["steal_pct"] = machineStart.Shares(machine)
	}
	if sinkHere {
		// This process did little else meanwhile than serve the sink.
		row.Values["sink_cpu_us"] = float64((self - selfStart).Microseconds()) / float64(events)
	}
	b.rows = append(b.rows, row)
	return nil
}

// checkWritable checks that path can be written, leaving a file already
// there as it is (opened, not truncated) and creating none.
func checkWritable(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
			defer os.Remove(path)
		}
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// procUsage reads the server's memory and CPU and this process's CPU.
func procUsage(child *bench.Child) (bench.ProcStatus, time.Duration, error) {
	ps, err := bench.ReadProc(child.Pid())
	if err != nil {
		return ps, 0, err
	}
	self, err := bench.SelfCPU()
	return ps, self, err
}

// attemptSpan reads from the store at path when its first attempt started
// and its last one ended: the drain's own time, without the server's start
// or the polling that noticed the end.
func attemptSpan(ctx context.Context, path string) (first, last time.Time, err error) {
	db, err := sqlite.Open(path, sqlite.Options{Logger: zerolog.Nop()})
	if err != nil {
		return first, last, err
	}
	defer db.Close()
	first, last, ok, err := db.AttemptSpan(ctx)
	if err != nil {
		return first, last, err
	}
	if !ok || !last.After(first) {
		return first, last, errors.New("read attempt times: no attempts recorded")
	}
	return first, last, nil
}

// fill writes events straight into a new store at path, in large
// transactions with synchronous off (it is setup, not measurement), each
// queued for targets.
func (b *benchCmd) fill(ctx context.Context, path string, events int, targets []string) error {
	db, err := sqlite.Open(path, sqlite.Options{Synchronous: "off", Logger: zerolog.Nop()})
	if err != nil {
		return err
	}
	prefix := b.runID + "-fill-" + filepath.Base(filepath.Dir(path))
	now := time.Now()
	const batch = 5000
	start := time.Now()
	evs := make([]*dedupe.Event, 0, batch)
	for done := 0; done < events; {
		k := min(batch, events-done)
		evs = evs[:0]
		for i := done; i < done+k; i++ {
			id := prefix + "-" + strconv.Itoa(i)
			headers := b.req.Header.Clone()
			headers.Set(bench.IDHeader, id)
			evs = append(evs, &dedupe.Event{
				Source: "github", EventID: id, Type: "push", ReceivedAt: now,
				ContentType: "application/json", Headers: headers, Body: b.req.Body,
			})
		}
		_, err := db.IngestEvents(ctx, evs, targets)
		if err != nil {
			db.Close()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("fill %s with %d events: %w (stores go under $TMPDIR: is that disk full?)", path, events, err)
		}
		done += k
		el := time.Since(start).Seconds()
		b.progress(fmt.Sprintf("prefill %s: %d/%d events  %.0f/s", filepath.Base(filepath.Dir(path)), done, events, float64(done)/el))
	}
	if err := db.Close(); err != nil {
		return err
	}
	// Flush the prefill to disk now, so that the server measured next does
	// not pay for its writeback in its own fsyncs.
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// freshStore is the path of a new store for one run.
func (b *benchCmd) freshStore(round int, name string) string {
	return filepath.Join(b.dir, fmt.Sprintf("r%d-%s", round, name), "hookbox.db")
}

// writeConfig writes a hookbox config with default durability, one GitHub
// source, and the given [[target]] text.
func (b *benchCmd) writeConfig(round int, name, storePath, targets string) (string, error) {
	text := fmt.Sprintf(`[server]
listen = "127.0.0.1:0"

[store]
path = %q

[delivery]
workers = %d

[[source]]
name = "github"
verify = "github"
secret = %q

%s`, storePath, b.workers, benchSecret, targets)
	path := filepath.Join(b.dir, fmt.Sprintf("r%d-%s.toml", round, name))
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return "", err
	}
	return path, nil
}

func (b *benchCmd) bareArgv() []string {
	return append(append([]string{}, b.serverArgv...), "bench-server", "--kind", "bare")
}

// hookboxArgv starts a hookbox server, writing a CPU profile to profile
// unless it is "".
func (b *benchCmd) hookboxArgv(cfg, profile string) []string {
	argv := append(append([]string{}, b.serverArgv...), "bench-server", "--kind", "hookbox", "--config", cfg)
	if profile != "" {
		argv = append(argv, "--cpuprofile", profile)
	}
	return argv
}

// profile is where round's server writes its CPU profile (with suffix):
// only the last round's is kept, and only with --cpuprofile.
func (b *benchCmd) profile(round int, suffix string) string {
	if b.cpuprofile == "" || round != b.rounds {
		return ""
	}
	return b.cpuprofile + suffix
}

// progress rewrites one status line on a terminal, or writes a line
// elsewhere; "" clears it.
func (b *benchCmd) progress(msg string) {
	if f, ok := b.Stderr.(*os.File); ok && logging.IsTerminal(f) {
		fmt.Fprintf(b.Stderr, "\r\x1b[K%s", msg)
		return
	}
	// Not a terminal (a log, CI): a line a second at most.
	if msg != "" && time.Since(b.printed) >= time.Second {
		b.printed = time.Now()
		fmt.Fprintln(b.Stderr, msg)
	}
}

// deliveryTimeout bounds the wait for deliveries: generous, for slow
// machines, and yet a bench that cannot finish stops by itself.
func (b *benchCmd) deliveryTimeout() time.Duration { return 60*time.Second + 10*b.duration }

// sinkSaid adds to err why the sink refused a request, if it did: a
// delivery it refused never counts, and the wait for it times out.
func sinkSaid(err error, sink *bench.Sink) error {
	if err != nil {
		if why := sink.Refused(); why != nil {
			return fmt.Errorf("%w; the sink refused a request: %v", err, why)
		}
	}
	return err
}

// serverSaid is the end of what child wrote on stderr, for an error message.
func serverSaid(child *bench.Child) string {
	if s := strings.TrimSpace(child.Stderr()); s != "" {
		return "; the server said:\n" + s
	}
	return ""
}

// goal is a target figure for a ratio or value, from the project's goals.
type goal struct {
	name  string
	value bench.Spread
	want  string
	ok    bool
}

func (b *benchCmd) goals() []goal {
	var gs []goal
	ratio := func(name, num, numKey, den, denKey string, atLeast float64) {
		s := bench.Ratio(b.rows, num, numKey, den, denKey)
		if s.N > 0 {
			gs = append(gs, goal{name, s, fmt.Sprintf("≥ %.2f", atLeast), s.Median >= atLeast})
		}
	}
	value := func(name, server, key, cmp string, limit float64) {
		vs := bench.Values(b.rows, server, key)
		if len(vs) == 0 {
			return
		}
		s := bench.SpreadOf(vs)
		ok := s.Median <= limit
		if cmp == "≥" {
			ok = s.Median >= limit
		}
		gs = append(gs, goal{name, s, fmt.Sprintf("%s %g", cmp, limit), ok})
	}
	switch b.mode {
	case "ingest":
		want := 0.45
		if b.conns >= 256 {
			want = 0.5
		}
		ratio("acks/s hookbox ÷ bare", "hookbox", "acks_per_s", "bare", "acks_per_s", want)
		if b.conns <= 64 {
			value("hookbox p99 ms", "hookbox", "p99_ms", "≤", 20)
		}
		rss := 32.0
		if b.conns > 64 {
			rss = 64
		}
		value("hookbox RSS MiB", "hookbox", "rss_mib", "≤", rss)
		value("hookbox WAL peak MiB", "hookbox", "wal_mib", "≤", float64(sqlite.DefaultJournalSizeLimit>>20))
		ratio("acks/s prefilled ÷ empty", "hookbox+prefill", "acks_per_s", "hookbox", "acks_per_s", 0.9)
	case "rate":
		value("hookbox p99 ms", "hookbox", "p99_ms", "≤", 5)
	case "e2e":
		ratio("delivered/s ÷ ingest acks/s", "hookbox+url", "delivered_per_s", "hookbox", "acks_per_s", 0.4)
		value("backlog drain events/s", "backlog", "per_s", "≥", 10000)
	case "command":
		ratio("command deliveries/s ÷ raw fork/exec", "hookbox+command", "per_s", "fork/exec", "per_s", 0.8)
	}
	return gs
}

func (b *benchCmd) columns() []bench.Column {
	switch b.mode {
	case "e2e":
		return []bench.Column{
			col("acks_per_s", "acks/s", "%.0f"), col("p99_ms", "p99 ms", "%.1f"),
			col("delivered_per_s", "delivered/s", "%.0f"), col("drain_s", "drain s", "%.2f"),
			col("per_s", "backlog/s", "%.0f"), col("rss_mib", "RSS MiB", "%.1f"),
			col("cpu_us_per_ack", "CPU µs", "%.0f"), col("sink_cpu_us", "sink µs", "%.0f"),
			col("writes_per_commit", "writes/commit", "%.1f"),
		}
	case "command":
		return []bench.Column{
			col("per_s", "runs/s", "%.0f"), col("events", "runs", "%.0f"), col("seconds", "seconds", "%.2f"),
			col("rss_mib", "RSS MiB", "%.1f"), col("cpu_us_per_ack", "CPU µs/run", "%.0f"),
			col("writes_per_commit", "writes/commit", "%.1f"),
		}
	}
	cols := []bench.Column{
		col("acks_per_s", "acks/s", "%.0f"), col("p50_ms", "p50 ms", "%.2f"), col("p90_ms", "p90 ms", "%.2f"),
		col("p99_ms", "p99 ms", "%.2f"), col("errors", "errors", "%.0f"), col("rss_mib", "RSS MiB", "%.1f"),
		col("cpu_us_per_ack", "CPU µs/ack", "%.0f"), col("wal_mib", "WAL MiB", "%.1f"),
	}
	if b.mode == "rate" {
		cols = append(cols, col("dropped", "dropped", "%.0f"), col("lag_p99_ms", "send lag p99 ms", "%.2f"))
	}
	return cols
}

func col(key, head, format string) bench.Column {
	return bench.Column{Key: key, Head: head, Format: format}
}

// cpus is the CPUs this process may use (GOMAXPROCS follows a container's
// CPU limit): the figure the header and the drain's bound both give.
func cpus() int { return runtime.GOMAXPROCS(0) }

func (b *benchCmd) describe() string {
	load := fmt.Sprintf("%d connections", b.conns)
	switch b.mode {
	case "rate":
		load = fmt.Sprintf("%.0f req/s over %d connections", b.rate, b.conns)
	case "e2e":
		load += fmt.Sprintf(", %d workers", b.workers)
	case "command":
		load = fmt.Sprintf("%d workers", b.workers)
	}
	return fmt.Sprintf("mode %s, %s, %s a server, %d round(s), %d-byte GitHub-signed bodies, synchronous=full; %d CPUs, %s %s/%s",
		b.mode, load, b.duration, b.rounds, len(b.req.Body), cpus(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func (b *benchCmd) report() error {
	gs := b.goals()
	if b.asJSON {
		enc := json.NewEncoder(b.Stdout)
		enc.Encode(map[string]any{"type": "run", "mode": b.mode, "conns": b.conns, "duration_s": b.duration.Seconds(),
			"rounds": b.rounds, "rate": b.rate, "prefill": b.prefill, "backlog": b.backlog, "body_size": len(b.req.Body),
			"workers": b.workers, "cpus": cpus(), "go": runtime.Version(), "notes": b.notes})
		for _, r := range b.rows {
			line := map[string]any{"type": "round", "round": r.Round, "server": r.Server}
			for k, v := range r.Values {
				line[k] = v
			}
			enc.Encode(line)
		}
		for _, s := range bench.Servers(b.rows) {
			line := map[string]any{"type": "summary", "server": s}
			for _, c := range b.columns() {
				if vs := bench.Values(b.rows, s, c.Key); len(vs) > 0 {
					line[c.Key] = bench.SpreadOf(vs)
				}
			}
			enc.Encode(line)
		}
		for _, g := range gs {
			enc.Encode(map[string]any{"type": "goal", "name": g.name, "value": g.value, "want": g.want, "met": g.ok})
		}
		for _, d := range b.depths {
			enc.Encode(map[string]any{"type": "queue_depth", "round": d.Round, "every_s": d.Every, "samples": d.Samples})
		}
		return nil
	}
	w := b.Stdout
	fmt.Fprintf(w, "hookbox bench: %s\n\n", b.describe())
	cols := b.columns()
	if err := bench.WriteRounds(w, b.rows, cols); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := bench.WriteSummary(w, b.rows, cols); err != nil {
		return err
	}
	if len(gs) > 0 {
		fmt.Fprintln(w)
		for _, g := range gs {
			met := "met"
			if !g.ok {
				met = "NOT met"
			}
			fmt.Fprintf(w, "%-40s %s   goal %s: %s\n", g.name, bench.FormatSpread(g.value, "%.2f"), g.want, met)
		}
	}
	for _, d := range b.depths {
		// At most about 30 samples on a line; --json has them all.
		step := max(1, (len(d.Samples)+29)/30)
		var parts []string
		for i := 0; i < len(d.Samples); i += step {
			parts = append(parts, strconv.Itoa(int(d.Samples[i][1])))
		}
		fmt.Fprintf(w, "\nqueue depth, round %d, every %.2fs from load start: %s", d.Round, d.Every*float64(step), strings.Join(parts, " "))
	}
	if len(b.depths) > 0 {
		fmt.Fprintln(w)
	}
	for _, n := range b.notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchServer is the hidden `hookbox bench-server` that `hookbox bench`
// starts as a child: it serves on loopback, prints "listening on http://ADDR",
// and shuts down when its stdin closes or on SIGINT/SIGTERM.
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
	var addr string
	var stop func() error
	switch *kind {
	case "bare":
		ln, err := bench.Listen()
		if err != nil {
			return err
		}
		srv := bench.NewHTTPServer(bench.Bare())
		go func() { _ = srv.Serve(ln) }()
		addr = ln.Addr().String()
		stop = func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return srv.Shutdown(ctx)
		}
	case "hookbox":
		if *cfgPath == "" {
			return cli.Usagef("bench-server: --config is required with --kind hookbox")
		}
		cfg, err := config.Load(*cfgPath, c.Getenv)
		if err != nil {
			return err
		}
		if err := bench.CheckLoopback("http://" + cfg.Server.Listen); err != nil {
			return fmt.Errorf("bench-server: listen: %w", err)
		}
		m := NewMain(cfg, zerolog.New(c.Stderr).Level(zerolog.WarnLevel).With().Timestamp().Logger())
		if err := m.Run(ctx); err != nil {
			return err
		}
		addr, stop = m.Addr(), m.Close
	default:
		return cli.Usagef("bench-server: --kind %q: want bare or hookbox", *kind)
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			stop()
			return fmt.Errorf("cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			stop()
			return fmt.Errorf("cpuprofile: %w", err)
		}
	}
	fmt.Fprintln(c.Stdout, bench.ReadyPrefix+addr)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, c.Stdin)
		close(eof)
	}()
	select {
	case <-eof:
	case <-sigs:
	case <-ctx.Done():
	}
	if *cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	if err := stop(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
