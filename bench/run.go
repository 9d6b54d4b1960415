package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Secret signs the benchmark's requests and is the secret its hookbox
// servers verify; it guards nothing.
const Secret = "hookbox-bench-secret"

// The modes of a run.
const (
	ModeIngest  = "ingest"  // bare vs hookbox, closed loop
	ModeRate    = "rate"    // bare vs hookbox at a fixed request rate, and the disk's fsync alone
	ModeE2E     = "e2e"     // hookbox ingest, ingest while delivering to a local sink, a backlog drained to it
	ModeCommand = "command" // raw fork/exec of /bin/true vs hookbox draining to a /bin/true command target
)

// Options is one benchmark run, as `hookbox bench` describes it (BENCHMARKS.md
// gives what each mode measures). DefaultOptions gives the command's
// defaults.
type Options struct {
	Mode       string        // ModeIngest, ModeRate, ModeE2E or ModeCommand
	Conns      int           // concurrent keep-alive connections
	Duration   time.Duration // load time a server a round
	Rounds     int           // rounds; each runs every server once, in turn
	Rate       float64       // requests a second, in ModeRate
	Prefill    int           // ModeIngest and ModeRate: also measure a store holding this many events
	Backlog    int           // ModeE2E: queued deliveries to drain
	BodySize   int           // request body size in bytes
	Workers    int           // delivery workers (ModeE2E, ModeCommand), and the raw fork/exec concurrency
	JSON       bool          // one JSON object a line on stdout instead of tables
	CPUProfile string        // if set, where the last round's hookbox server writes a CPU profile (ModeE2E: the hookbox+url server; the backlog drain's to CPUProfile+".backlog")
	// Compare, in ModeIngest and ModeRate, is another receiver's URL on
	// loopback that every round also loads, with the same requests: the
	// "compare" rows. ComparePID, if set, is its process, whose CPU and
	// RSS are then measured as a child's are.
	Compare    string
	ComparePID int
	// Order (ModeE2E) is the sink target's order: "" or "none", "fifo",
	// "latest" or "coalesce". The backlog's events then spread over Keys
	// order keys, each key's in increasing versions; under load each
	// event is its own key (its delivery id).
	Order string
	Keys  int

	// ServerArgv starts a bench server when followed by "bench-server"
	// and its flags (`hookbox bench-server`, which hookbox's root package
	// serves with Serve); ServerEnv is added to its environment.
	ServerArgv []string
	ServerEnv  []string
}

// DefaultOptions returns the options `hookbox bench` runs with when given
// no flags, with ServerArgv unset.
func DefaultOptions() Options {
	return Options{Mode: ModeIngest, Conns: 64, Duration: 5 * time.Second, Rounds: 3, Rate: 1000,
		Backlog: 20000, BodySize: 1024, Workers: 4, Keys: 1000}
}

// OptionError is an option Run cannot use. Name is the option as `hookbox
// bench` spells its flag, without the dashes ("conns").
type OptionError struct {
	Name string
	Msg  string
}

func (e *OptionError) Error() string { return "--" + e.Name + " " + e.Msg }

// Validate returns an *OptionError for the first option out of its range.
func (o Options) Validate() error {
	bad := func(name, msg string) error { return &OptionError{Name: name, Msg: msg} }
	switch {
	case o.Mode != ModeIngest && o.Mode != ModeE2E && o.Mode != ModeCommand && o.Mode != ModeRate:
		return bad("mode", fmt.Sprintf("%q: want ingest, e2e, command or rate", o.Mode))
	case o.Conns < 1 || o.Conns > 10000:
		return bad("conns", "must be 1 to 10000")
	case o.Duration <= 0 || o.Duration > time.Hour:
		return bad("duration", "must be above 0 and at most 1h")
	case o.Rounds < 1 || o.Rounds > 100:
		return bad("rounds", "must be 1 to 100")
	case o.Rate <= 0 || o.Rate > 1e6:
		return bad("rate", "must be above 0 and at most 1000000")
	case o.Prefill < 0:
		return bad("prefill", "must not be negative")
	case o.Backlog < 0:
		return bad("backlog", "must not be negative")
	case o.Mode == ModeE2E && o.Backlog < 1:
		return bad("backlog", "must be at least 1 in e2e mode")
	case o.BodySize < 0 || o.BodySize > 1<<20:
		return bad("body-size", "must be 0 to 1048576")
	case o.Workers < 1 || o.Workers > 256:
		return bad("workers", "must be 1 to 256")
	case o.Order != "" && o.Order != "none" && o.Order != "fifo" && o.Order != "latest" && o.Order != "coalesce":
		return bad("order", fmt.Sprintf("%q: want none, fifo, latest or coalesce", o.Order))
	case o.Keys < 1:
		return bad("keys", "must be at least 1")
	case o.Compare != "" && o.Mode != ModeIngest && o.Mode != ModeRate:
		return bad("compare", "applies to --mode ingest or rate")
	case o.ComparePID < 0 || (o.ComparePID > 0 && o.Compare == ""):
		return bad("compare-pid", "needs --compare, and a process id above 0")
	}
	if o.Compare != "" {
		if err := loopbackURL(o.Compare); err != nil {
			return bad("compare", err.Error())
		}
	}
	return nil
}

// loopbackURL checks that raw is an http URL of a host on loopback: the
// load a benchmark puts out only ever goes to this machine.
func loopbackURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("%q: want an http:// URL, e.g. http://127.0.0.1:9000/hooks", raw)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%q: the host must be on loopback (127.0.0.1, ::1 or localhost): a load test sends only to this machine", raw)
	}
	return nil
}

// Run runs the benchmark o describes: every server of o.Mode as a child
// process on loopback, in alternating rounds, with progress lines on stderr
// and the results (tables, or JSON lines with o.JSON) on stdout. Stores go
// in a temporary directory under $TMPDIR, removed at the end. It returns an
// *OptionError for an option out of its range, before anything runs, and
// an error if a server fails to start, to answer or to deliver in time.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if len(o.ServerArgv) == 0 {
		return errors.New("no command for the bench servers (Options.ServerArgv)")
	}
	b := &runner{Options: o, stdout: stdout, stderr: stderr}
	var err error
	if b.dir, err = os.MkdirTemp("", "hookbox-bench-"); err != nil {
		return fmt.Errorf("create a directory for the stores under $TMPDIR: %w", err)
	}
	defer os.RemoveAll(b.dir)
	if b.CPUProfile != "" {
		// The profile is written by the last round's server: find out now,
		// not after every round has run, that it cannot be.
		if err := checkWritable(b.CPUProfile); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
	}
	b.req = NewGitHubRequest(Secret, b.BodySize)
	b.runID = strconv.FormatInt(time.Now().UnixNano(), 36)
	b.metrics = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}

	switch b.Mode {
	case ModeIngest, ModeRate:
		err = b.ingest(ctx)
	case ModeE2E:
		err = b.endToEnd(ctx)
	case ModeCommand:
		err = b.command(ctx)
	}
	b.progress("")
	if err != nil {
		return err
	}
	return b.report()
}

// runner is one Run: its options, what it has measured so far, and where
// it writes.
type runner struct {
	Options
	stdout, stderr io.Writer

	dir     string
	req     GitHubRequest
	runID   string
	rows    []Row
	depths  []depthSeries
	notes   []string
	metrics *http.Client
	printed time.Time       // when progress last wrote a line (not on a terminal)
	gaps    []time.Duration // ordered e2e: the sink's idle gaps in the backlog drains
}

// depthSeries is the queue depth sampled during one end-to-end round.
type depthSeries struct {
	Round   int          `json:"round"`
	Every   float64      `json:"every_s"`
	Samples [][2]float64 `json:"samples"` // [seconds since load start, accepted but not yet delivered]
}

// ingest runs bare and hookbox (and hookbox on a prefilled store) in turn,
// closed loop, or open loop at Rate in ModeRate.
func (b *runner) ingest(ctx context.Context) error {
	var prefilled string
	if b.Prefill > 0 {
		prefilled = filepath.Join(b.dir, "prefilled", "hookbox.db")
		start := time.Now()
		if err := b.fill(ctx, prefilled, b.Prefill, nil); err != nil {
			return err
		}
		b.notes = append(b.notes, fmt.Sprintf("prefilled %d events in %.1fs (shared by every round's hookbox+prefill run)", b.Prefill, time.Since(start).Seconds()))
	}
	for r := 1; r <= b.Rounds; r++ {
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
		if b.Compare != "" {
			if err := b.measureCompare(ctx, r); err != nil {
				return err
			}
		}
		if b.Mode == ModeRate {
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
	if b.Compare != "" {
		b.compareNote()
	}
	if b.Mode == ModeRate {
		b.notes = append(b.notes, fmt.Sprintf("fsync: the disk alone, writing and fsyncing a page %.0f times a second, had a p99 of %.2f ms (median of the rounds); every hookbox ack waits for one such fsync",
			b.Rate, SpreadOf(Values(b.rows, "fsync", "p99_ms")).Median))
	}
	return nil
}

// endToEnd measures, each round: hookbox ingest alone; hookbox delivering
// every event to a local URL sink while under load; and the drain of a
// prefilled backlog to the same sink.
func (b *runner) endToEnd(ctx context.Context) error {
	sink, err := StartSink()
	if err != nil {
		return err
	}
	defer sink.Close()
	target := fmt.Sprintf("[[target]]\nname = \"sink\"\nsource = \"github\"\nurl = %q\ntimeout = \"10s\"\n", sink.URL())
	if b.ordered() {
		target += fmt.Sprintf("order = %q\n", b.Order)
	}
	for r := 1; r <= b.Rounds; r++ {
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
		if err := b.fill(ctx, path, b.Backlog, []string{"sink"}); err != nil {
			return err
		}
		cfg, err = b.writeConfig(r, "backlog", path, target)
		if err != nil {
			return err
		}
		argv := b.hookboxArgv(cfg, b.profile(r, ".backlog"))
		if err := b.drain(ctx, r, "backlog", argv, path, b.Backlog, true, func(string) int64 {
			n, _ := sink.Counts()
			return n
		}); err != nil {
			return sinkSaid(err, sink)
		}
		b.gaps = append(b.gaps, sink.IdleGaps()...)
	}
	// The drain is CPU-bound for the machine as a whole: hookbox and the
	// sink (in this process) share its CPUs. Say what that bound is.
	own := SpreadOf(Values(b.rows, "backlog", "cpu_us_per_ack")).Median
	peer := SpreadOf(Values(b.rows, "backlog", "sink_cpu_us")).Median
	if own+peer > 0 {
		b.notes = append(b.notes, fmt.Sprintf("backlog drain: hookbox %.0f µs + sink %.0f µs of CPU a delivery (medians); %d CPUs fully busy would drain at most %.0f events/s",
			own, peer, cpus(), float64(cpus())*1e6/(own+peer)))
	}
	b.machineNote("backlog")
	if b.ordered() && len(b.gaps) > 0 {
		slices.Sort(b.gaps)
		ms := func(q float64) float64 { return float64(b.gaps[int(q*float64(len(b.gaps)-1))].Microseconds()) / 1000 }
		b.notes = append(b.notes, fmt.Sprintf("backlog drain: order = %q over %d keys; the sink's waits between one delivery's answer and the next while none ran (one lane's idle time): %d, median %.2f ms, p99 %.2f ms, longest %.2f ms, %d over 5 ms",
			b.Order, min(b.Keys, b.Backlog), len(b.gaps), ms(0.5), ms(0.99), ms(1), len(b.gaps)-sort.Search(len(b.gaps), func(i int) bool { return b.gaps[i] > 5*time.Millisecond })))
	}
	return nil
}

// ordered reports whether the e2e sink target orders its deliveries.
func (b *runner) ordered() bool { return b.Order != "" && b.Order != "none" }

// machineNote says how busy the machine's CPUs were during server's drains
// (medians over the rounds): idle time is room the drain left unused;
// softirq and steal are CPU time no process is charged for.
func (b *runner) machineNote(server string) {
	idle := Values(b.rows, server, "idle_pct")
	if len(idle) == 0 {
		return
	}
	b.notes = append(b.notes, fmt.Sprintf("%s drain: the machine's CPUs were %.0f%% idle (with I/O wait), %.0f%% in softirq (interrupt work such as loopback network delivery, charged to no process), %.0f%% stolen by the hypervisor (medians)",
		server, SpreadOf(idle).Median, SpreadOf(Values(b.rows, server, "softirq_pct")).Median,
		SpreadOf(Values(b.rows, server, "steal_pct")).Median))
}

// command compares hookbox running /bin/true for every event of a backlog
// with a plain loop of fork/exec of /bin/true at the same concurrency.
func (b *runner) command(ctx context.Context) error {
	argv := []string{"/bin/true"}
	if _, err := os.Stat(argv[0]); err != nil {
		return fmt.Errorf("command mode needs %s: %w", argv[0], err)
	}
	target := fmt.Sprintf("[[target]]\nname = \"true\"\nsource = \"github\"\ncommand = [%q]\ntimeout = \"30s\"\n", argv[0])
	for r := 1; r <= b.Rounds; r++ {
		b.progress(fmt.Sprintf("round %d/%d  fork/exec %s x%d for %s", r, b.Rounds, argv[0], b.Workers, b.Duration))
		n, elapsed, err := ForkExec(ctx, argv, b.Workers, b.Duration)
		if err != nil {
			return err
		}
		raw := float64(n) / elapsed.Seconds()
		b.rows = append(b.rows, Row{Round: r, Server: "fork/exec", Values: map[string]float64{"per_s": raw, "events": float64(n), "seconds": elapsed.Seconds()}})

		// A backlog the raw rate would clear in Duration.
		events := max(int(raw*b.Duration.Seconds()), 50)
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
			n, err := Counters(ctx, b.metrics, "http://"+addr, "hookbox_delivered_total")
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
func (b *runner) measure(ctx context.Context, round int, name string, argv []string, store string) error {
	b.progress(fmt.Sprintf("round %d/%d  %s: starting", round, b.Rounds, name))
	child, err := StartChild(ctx, argv, b.ServerEnv)
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
			return fmt.Errorf("%s: no request was answered within --duration %s; use a longer --duration", name, b.Duration)
		}
		return fmt.Errorf("%s: no request answered 200 (first error: %s)", name, st.FirstError)
	}
	b.rows = append(b.rows, row)
	return nil
}

// compareNote says how hookbox and bare compare with the --compare
// receiver, round by round (medians, min–max).
func (b *runner) compareNote() {
	say := func(what string, s Spread) string {
		return fmt.Sprintf("%s %.2f (%.2f–%.2f)", what, s.Median, s.Min, s.Max)
	}
	parts := []string{
		say("acks/s hookbox ÷ compare", Ratio(b.rows, "hookbox", "acks_per_s", "compare", "acks_per_s")),
		say("compare ÷ bare", Ratio(b.rows, "compare", "acks_per_s", "bare", "acks_per_s")),
	}
	if s := Ratio(b.rows, "hookbox", "cpu_us_per_ack", "compare", "cpu_us_per_ack"); s.N > 0 {
		parts = append(parts, say("CPU a request hookbox ÷ compare", s))
	}
	b.notes = append(b.notes, fmt.Sprintf("compare (%s): %s; only hookbox's answers wait for an fsync", b.Compare, strings.Join(parts, ", ")))
}

// measureCompare loads the --compare receiver and records its row: its
// CPU and RSS only when --compare-pid names its process.
func (b *runner) measureCompare(ctx context.Context, round int) error {
	const name = "compare"
	b.progress(fmt.Sprintf("round %d/%d  %s: %s", round, b.Rounds, name, b.Compare))
	row, st, err := b.loadURL(ctx, round, name, b.Compare, b.ComparePID, "", nil)
	if err != nil {
		return err
	}
	if st.OK == 0 {
		return fmt.Errorf("%s: %s answered no request with a 2xx (first error: %s)", name, b.Compare, st.FirstError)
	}
	b.rows = append(b.rows, row)
	return nil
}

// load puts child under the configured load and returns its row, with the
// child's peak RSS, the CPU it used during the load and, for a hookbox on
// the store at path store, the largest its WAL file grew.
func (b *runner) load(ctx context.Context, round int, name string, child *Child, store string, acked *atomic.Int64) (Row, *Stats, error) {
	return b.loadURL(ctx, round, name, "http://"+child.Addr+"/hooks/github", child.Pid(), store, acked)
}

// loadURL is load for a receiver at target, its process pid (0: unknown, its
// CPU and RSS left out).
func (b *runner) loadURL(ctx context.Context, round int, name, target string, pid int, store string, acked *atomic.Int64) (Row, *Stats, error) {
	var before ProcStatus
	if pid > 0 {
		var err error
		if before, err = ReadProc(pid); err != nil {
			return Row{}, nil, err
		}
	}
	var walPeak atomic.Int64
	stopWAL := func() {}
	if store != "" {
		stopWAL = Every(20*time.Millisecond, func() {
			if fi, err := os.Stat(store + "-wal"); err == nil && fi.Size() > walPeak.Load() {
				walPeak.Store(fi.Size())
			}
		})
	}
	l := Load{
		URL:      target,
		Request:  b.req,
		IDPrefix: fmt.Sprintf("%s-%d-%s", b.runID, round, name),
		OK:       acked,
		Conns:    b.Conns,
		Duration: b.Duration,
		Progress: func(el time.Duration, ok, failed int64) {
			b.progress(fmt.Sprintf("round %d/%d  %-16s %4.1fs/%s  %d acks  %.0f/s  %d errors",
				round, b.Rounds, name, el.Seconds(), b.Duration, ok, float64(ok)/el.Seconds(), failed))
		},
	}
	if b.Mode == ModeRate {
		l.Rate = b.Rate
	}
	st, err := l.Run(ctx)
	stopWAL()
	if err != nil {
		return Row{}, nil, err
	}
	v := map[string]float64{
		"acks_per_s": st.PerSecond(),
		"acks":       float64(st.OK),
		"errors":     float64(st.Failed),
	}
	if pid > 0 {
		after, err := ReadProc(pid)
		if err != nil {
			return Row{}, nil, err
		}
		v["rss_mib"] = float64(after.HWMKiB) / 1024
		v["cpu_pct"] = 100 * (after.CPU - before.CPU).Seconds() / st.Elapsed.Seconds()
		if st.OK > 0 {
			v["cpu_us_per_ack"] = float64((after.CPU - before.CPU).Microseconds()) / float64(st.OK)
		}
	}
	maps.Copy(v, latencyValues(&st.Latency))
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
	return Row{Round: round, Server: name, Values: v}, st, nil
}

// syncFloor records, as the row "fsync", the latency of writing and
// fsyncing a page at the request rate on the stores' disk with no server
// running: the part of a durable ack's latency that is the disk's.
func (b *runner) syncFloor(ctx context.Context, round int) error {
	b.progress(fmt.Sprintf("round %d/%d  fsync: %.0f page writes + fsync a second on the stores' disk", round, b.Rounds, b.Rate))
	h, err := SyncFloor(ctx, b.dir, b.Rate, b.Duration)
	if err != nil {
		return err
	}
	b.rows = append(b.rows, Row{Round: round, Server: "fsync", Values: latencyValues(h)})
	return nil
}

// measureDelivered loads a hookbox that delivers to sink, then waits until
// every accepted event has arrived there, sampling the queue depth: the
// events accepted so far less those the sink has seen, counted here rather
// than scraped from the server, which would do the counting's work while
// it is measured.
func (b *runner) measureDelivered(ctx context.Context, round int, cfg, store string, sink *Sink) error {
	const name = "hookbox+url"
	b.progress(fmt.Sprintf("round %d/%d  %s: starting", round, b.Rounds, name))
	child, err := StartChild(ctx, b.hookboxArgv(cfg, b.profile(round, "")), b.ServerEnv)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer child.Stop()
	every := max(b.Duration/20, 100*time.Millisecond)
	series := depthSeries{Round: round, Every: every.Seconds()}
	var acked atomic.Int64
	start := time.Now()
	stopSampling := Every(every, func() {
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
	all := WaitFor(wait, func() bool {
		d, _ := sink.Counts()
		if d < st.OK {
			b.progress(fmt.Sprintf("round %d/%d  %s: %d of %d accepted events delivered", round, b.Rounds, name, d, st.OK))
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
	if ps, err := ReadProc(child.Pid()); err == nil {
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
func (b *runner) drain(ctx context.Context, round int, name string, argv []string, path string, events int, sinkHere bool, count func(addr string) int64) error {
	b.progress(fmt.Sprintf("round %d/%d  %s: draining %d events", round, b.Rounds, name, events))
	start := time.Now()
	child, err := StartChild(ctx, argv, b.ServerEnv)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer child.Stop()
	atStart, selfStart, err := procUsage(child)
	if err != nil {
		return fmt.Errorf("%s: %w%s", name, err, serverSaid(child))
	}
	machineStart, machineErr := ReadMachineCPU() // Linux only; else left out
	wait, cancel := context.WithTimeout(ctx, b.deliveryTimeout())
	defer cancel()
	var n int64
	ok := WaitFor(wait, func() bool {
		n = count(child.Addr)
		b.progress(fmt.Sprintf("round %d/%d  %s: %d of %d delivered  %.1fs", round, b.Rounds, name, n, events, time.Since(start).Seconds()))
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
	machine, machineEndErr := ReadMachineCPU()
	commits, err := Counters(ctx, b.metrics, "http://"+child.Addr, "hookbox_store_commits_total", "hookbox_store_writes_total")
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
	row := Row{Round: round, Server: name, Values: map[string]float64{
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
func procUsage(child *Child) (ProcStatus, time.Duration, error) {
	ps, err := ReadProc(child.Pid())
	if err != nil {
		return ps, 0, err
	}
	self, err := SelfCPU()
	return ps, self, err
}

func (b *runner) bareArgv() []string {
	return append(append([]string{}, b.ServerArgv...), "bench-server", "--kind", "bare")
}

// hookboxArgv starts a hookbox server, writing a CPU profile to profile
// unless it is "".
func (b *runner) hookboxArgv(cfg, profile string) []string {
	argv := append(append([]string{}, b.ServerArgv...), "bench-server", "--kind", "hookbox", "--config", cfg)
	if profile != "" {
		argv = append(argv, "--cpuprofile", profile)
	}
	return argv
}

// profile is where round's server writes its CPU profile (with suffix):
// only the last round's is kept, and only with CPUProfile set.
func (b *runner) profile(round int, suffix string) string {
	if b.CPUProfile == "" || round != b.Rounds {
		return ""
	}
	return b.CPUProfile + suffix
}

// progress rewrites one status line on a terminal, or writes a line
// elsewhere; "" clears it.
func (b *runner) progress(msg string) {
	if f, ok := b.stderr.(*os.File); ok && isTerminal(f) {
		fmt.Fprintf(b.stderr, "\r\x1b[K%s", msg)
		return
	}
	// Not a terminal (a log, CI): a line a second at most.
	if msg != "" && time.Since(b.printed) >= time.Second {
		b.printed = time.Now()
		fmt.Fprintln(b.stderr, msg)
	}
}

// deliveryTimeout bounds the wait for deliveries: generous, for slow
// machines, and yet a bench that cannot finish stops by itself.
func (b *runner) deliveryTimeout() time.Duration { return 60*time.Second + 10*b.Duration }

// sinkSaid adds to err why the sink refused a request, if it did: a
// delivery it refused never counts, and the wait for it times out.
func sinkSaid(err error, sink *Sink) error {
	if err != nil {
		if why := sink.Refused(); why != nil {
			return fmt.Errorf("%w; the sink refused a request: %v", err, why)
		}
	}
	return err
}

// serverSaid is the end of what child wrote on stderr, for an error message.
func serverSaid(child *Child) string {
	if s := strings.TrimSpace(child.Stderr()); s != "" {
		return "; the server said:\n" + s
	}
	return ""
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
