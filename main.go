// Command hookbox is a durable inbox for webhooks: it verifies, dedupes and
// stores every webhook in SQLite before answering 200, then delivers each
// one to local commands and URLs with retries and a dead-letter table.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"hookbox/config"
	"hookbox/dedupe"
	"hookbox/handlers"
	"hookbox/queue"
	"hookbox/receiver"
	"hookbox/store"
)

// Set at build time with -ldflags "-X main.version=… -X main.commit=…".
var (
	version = "dev"
	commit  = ""
)

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	default:
		var ue *usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(os.Stderr, "hookbox:", err)
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "hookbox:", err)
		os.Exit(1)
	}
}

// Main holds the configuration and the long-lived parts of a running
// hookbox, wired by hand.
type Main struct {
	Config    config.Config
	LocalSink bool // no config file: accept anything, deliver nowhere
	Logger    zerolog.Logger
	Now       func() time.Time
	// AlertBackoff, when set, replaces the alerter's first wait between
	// tries of a failed alert (it doubles after each further failure).
	AlertBackoff time.Duration
	// FirstSweep is how long after the start the first retention sweep
	// runs (default a minute, or retention.interval if shorter): a serve
	// restarted more often than the interval still sweeps.
	FirstSweep time.Duration
	// RefusedLogBurst, when set, replaces how many refused-signature
	// warnings are logged in each 10 s window (10).
	RefusedLogBurst int

	DB       *store.DB
	Events   *dedupe.Store
	Queue    *queue.Queue
	Pool     *queue.Pool
	Alerter  *queue.Alerter
	Receiver *receiver.Server
	Metrics  *Metrics

	lock    *os.File
	cancel  context.CancelFunc
	serveCh chan error
	sweeper chan struct{}
}

// NewMain returns a Main for cfg.
func NewMain(cfg config.Config, logger zerolog.Logger) *Main {
	return &Main{Config: cfg, Logger: logger, Now: time.Now}
}

// Run opens the store, starts the workers, the alerter and the sweeper,
// and starts serving HTTP. It returns once the listener is bound; Close
// stops everything.
func (m *Main) Run(ctx context.Context) (err error) {
	ctx, m.cancel = context.WithCancel(ctx)
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	cfg := m.Config
	if err := os.MkdirAll(filepath.Dir(cfg.Store.Path), 0o750); err != nil {
		return fmt.Errorf("store directory: %w", err)
	}
	// The store's identity as its command targets see it (HOOKBOX_STORE).
	storeID, err := store.RealPath(cfg.Store.Path)
	if err != nil {
		return fmt.Errorf("store path %s: %w", cfg.Store.Path, err)
	}
	// One serve per store, however its path is spelled: two would each
	// think the other's running deliveries were interrupted and run them
	// again.
	if m.lock, err = lockStore(storeID); err != nil {
		return err
	}
	m.DB, err = store.Open(cfg.Store.Path, store.Options{
		Synchronous: cfg.Store.Synchronous,
		Logger:      m.component("store"),
	})
	if err != nil {
		return err
	}
	m.Events = dedupe.New(m.DB)
	m.Queue = queue.New(m.DB)
	m.Metrics = NewMetrics(m.Queue, m.Now)
	m.Metrics.Store = m.DB.Stats

	targets, err := handlers.Targets(cfg, storeID)
	if err != nil {
		return err
	}
	if notifier := handlers.Notifier(cfg.Alert); notifier != nil {
		m.Alerter = queue.NewAlerter(m.Queue, notifier, m.component("alert"), m.Now)
		if m.AlertBackoff > 0 {
			m.Alerter.Backoff.Base = m.AlertBackoff
		}
	}
	m.Pool = queue.NewPool(m.Queue, queue.PoolConfig{
		Workers:     cfg.Delivery.Workers,
		MaxAttempts: cfg.Delivery.MaxAttempts,
		Lease:       cfg.Delivery.Lease.D(),
		Grace:       cfg.Delivery.Grace.D(),
		Retry:       queue.Backoff{Base: cfg.Delivery.Backoff.D(), Max: cfg.Delivery.MaxBackoff.D(), Jitter: 0.2},
		Targets:     targets,
		Alerting:    m.Alerter != nil,
		OnDead: func() {
			m.Metrics.Dead.Add(1)
			if m.Alerter != nil {
				m.Alerter.Wake()
			}
		},
		OnDone: m.Metrics.ObserveDone,
		Now:    m.Now,
		Logger: m.component("queue"),
	})

	routes := newRouter(cfg)
	m.Events.OnNew = func(tx *sql.Tx, ev *dedupe.Event) error {
		names := routes.targets(ev.Source, ev.Type)
		if len(names) == 0 {
			return nil
		}
		return m.Queue.EnqueueTx(context.Background(), tx, ev.ID, names, ev.ReceivedAt)
	}
	m.Events.OnDuplicate = func(tx *sql.Tx, id int64, now time.Time) (int64, error) {
		return m.Queue.ReviveTx(context.Background(), tx, id, now)
	}

	sources, err := buildSources(cfg)
	if err != nil {
		return err
	}
	m.Receiver = receiver.New(receiver.Config{
		Sources:           sources,
		AnySource:         m.LocalSink,
		MaxBody:           cfg.Server.MaxBody.Int(),
		ReadHeaderTimeout: cfg.Server.ReadHeaderTimeout.D(),
		ReadTimeout:       cfg.Server.ReadTimeout.D(),
		WriteTimeout:      cfg.Server.WriteTimeout.D(),
		IdleTimeout:       cfg.Server.IdleTimeout.D(),
		MaxHeaderBytes:    int(cfg.Server.MaxHeaderBytes.Int()),
		Metrics:           m.Metrics,
		Now:               m.Now,
		RefusedLogBurst:   m.RefusedLogBurst,
		Logger:            m.component("receiver"),
	}, &ingester{events: m.Events, routes: routes, pool: m.Pool})
	m.Metrics.Receiver = &m.Receiver.Counters

	m.warnUnknownTargets(ctx)
	qlog := m.component("queue")
	for _, note := range handlers.ProgramNotes(cfg) {
		qlog.Warn().Msg(note)
	}
	// Bound before the queue is touched: a serve that cannot listen fails
	// without recovering, claiming or running anything. Requests wait in
	// the listen queue until Serve below.
	if err := m.Receiver.Listen(cfg.Server.Listen); err != nil {
		return err
	}
	// Before the pool retries what the previous process left running: a
	// command attempt it started may still run, and must not overlap its
	// rerun.
	handlers.StopRunningLeftovers(ctx, storeID, m.Queue.Running, m.component("queue"))
	if err := m.Pool.Start(ctx); err != nil {
		return err
	}
	if m.Alerter != nil {
		m.Alerter.Start(ctx)
	}
	m.sweeper = make(chan struct{})
	go m.sweep(ctx)

	m.serveCh = make(chan error, 1)
	go func() { m.serveCh <- m.Receiver.Serve() }()
	return nil
}

// Addr is the receiver's bound address.
func (m *Main) Addr() string { return m.Receiver.Addr().String() }

// Err returns a channel that yields the HTTP server's error if it stops on its own.
func (m *Main) Err() <-chan error { return m.serveCh }

// Close stops accepting requests, lets in-flight requests commit, stops the
// workers (finishing or releasing running attempts), and closes the store.
// It returns the first error.
func (m *Main) Close() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	if m.Receiver != nil && m.serveCh == nil {
		keep(m.Receiver.Unbind())
	}
	if m.Receiver != nil && m.serveCh != nil {
		ctx, cancel := context.WithTimeout(context.Background(), m.Config.Server.ShutdownTimeout.D())
		if err := m.Receiver.Shutdown(ctx); errors.Is(err, receiver.ErrCutOff) {
			// Nothing of theirs was acked: the senders send again. A
			// normal stop, not a failure.
			log := m.component("receiver")
			log.Warn().Str("shutdown_timeout", m.Config.Server.ShutdownTimeout.D().String()).
				Msg("requests still in flight after server.shutdown_timeout were cut off; their senders get no answer and send again")
		} else {
			keep(err)
		}
		cancel()
	}
	if m.Pool != nil {
		m.Pool.Stop()
	}
	if m.Alerter != nil {
		m.Alerter.Stop()
	}
	if m.cancel != nil {
		m.cancel()
	}
	if m.sweeper != nil {
		<-m.sweeper
	}
	if m.DB != nil {
		keep(m.DB.Close())
	}
	if m.lock != nil {
		keep(m.lock.Close()) // releases the flock
		m.lock = nil
	}
	return first
}

func (m *Main) component(name string) zerolog.Logger {
	return m.Logger.With().Str("component", name).Logger()
}

// sweep runs retention: bodies of finished events after Retention.Payloads,
// dedupe keys after Retention.Dedupe. Errors are logged; the loop goes on.
func (m *Main) sweep(ctx context.Context) {
	defer close(m.sweeper)
	r := m.Config.Retention
	interval := r.Interval.D()
	log := m.component("sweeper")
	first := m.FirstSweep
	if first <= 0 {
		first = min(interval, time.Minute)
	}
	timer := time.NewTimer(first)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
			timer.Reset(interval)
		}
		now := m.Now()
		swept, deleted, err := m.Events.Sweep(ctx, now.Add(-r.Payloads.D()), now.Add(-r.Dedupe.D()), 500)
		if err != nil {
			if ctx.Err() == nil {
				log.Error().Err(err).Msg("retention sweep failed; will retry")
			}
			continue
		}
		if swept > 0 || deleted > 0 {
			log.Info().Int64("payloads_dropped", swept).Int64("events_deleted", deleted).Msg("retention sweep")
		}
	}
}

// serve runs hookbox until SIGINT, SIGTERM or SIGHUP (a closed terminal;
// there is no reload); a second signal exits at once.
func (c *cli) serve(ctx context.Context, args []string) error {
	fs := c.flags("serve")
	cfgPath := fs.String("config", "", "config file (default $HOOKBOX_CONFIG; none: local sink)")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	format := fs.String("log-format", "auto", "json, console or auto (console on a terminal)")
	if err := c.parse(fs, args, 0); err != nil {
		return err
	}
	cfg, local, err := c.loadConfig(*cfgPath, c.getenv)
	if err != nil {
		return err
	}
	logger, closeLog, err := newLogger(c.stderr, *level, *format)
	if err != nil {
		return err
	}
	defer closeLog()
	if err := hardenProcess(); err != nil {
		logger.Warn().Err(err).Msg("could not hide hookbox's environment (its secrets) from other processes of its user, command targets included")
	}
	m := NewMain(cfg, logger)
	m.LocalSink = local

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	if !signal.Ignored(syscall.SIGHUP) { // under nohup it stays ignored
		signal.Notify(sigs, syscall.SIGHUP)
	}
	defer signal.Stop(sigs)

	if err := m.Run(ctx); err != nil {
		return err
	}
	c.banner(m)
	select {
	case sig := <-sigs:
		logger.Info().Str("signal", sig.String()).Msg("shutting down: no new requests, finishing in-flight work")
	case err := <-m.Err():
		m.Close()
		return err
	}
	go func() {
		// A closed terminal can send SIGHUP twice (the kernel, then the
		// shell): only SIGINT or SIGTERM cuts the stop short.
		for sig := range sigs {
			if sig != syscall.SIGHUP {
				break
			}
		}
		logger.Warn().Msg("second signal: exiting now; running deliveries will be retried at the next start")
		closeLog()
		os.Exit(1)
	}()
	if err := m.Close(); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info().Msg("stopped")
	return nil
}

func (c *cli) banner(m *Main) {
	addr := m.Addr()
	w := c.stdout
	if !m.LocalSink {
		fmt.Fprintf(w, "hookbox %s listening on http://%s (store %s, %s, %s)\n",
			version, addr, m.Config.Store.Path, count(len(m.Config.Sources), "source"), count(len(m.Config.Targets), "target"))
		return
	}
	fmt.Fprintf(w, `hookbox %s: local sink (no config), storing every request in %s, delivering nowhere.
  send:  curl -sS http://%s/hooks/demo -H 'Content-Type: application/json' -d '{"id":"evt_1","type":"demo.created"}'
  look:  hookbox events            (or: go run . events)
         hookbox event --body ID   (the raw bytes)
  Any /hooks/{name} is accepted unsigned; the event id comes from the usual headers
  (webhook-id, X-GitHub-Delivery, Idempotency-Key, ...) or a JSON "id", else one is generated.
  Give a config (--config or $HOOKBOX_CONFIG) to verify signatures and deliver.
`, version, m.Config.Store.Path, addr)
}

// logRing is how many log lines may wait for a stalled log output before
// further ones are dropped; logFlushWait bounds how long the exit waits for
// the output to take what is left.
const (
	logRing      = 1024
	logFlushWait = 2 * time.Second
)

// newLogger returns serve's logger on w and the function that flushes it at
// exit. Lines reach w through a goroutine of their own: the request
// handlers and the store's single writer log as they go, and an output that
// stalls (a full pipe nobody reads, a paused terminal, a journal that is
// behind) must not stall them, or acks and commits would wait for the log.
// When logRing lines are waiting, further ones are dropped, and a warning
// says how many once the output takes lines again (logWriter).
func newLogger(w io.Writer, level, format string) (zerolog.Logger, func(), error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Logger{}, nil, &usageError{fmt.Sprintf("--log-level %q: want debug, info, warn or error", level)}
	}
	switch format {
	case "json":
	case "console":
		// Colours only on a terminal: in a file they are escape codes.
		f, ok := w.(*os.File)
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339, NoColor: !ok || !isTerminal(f)}
	case "auto":
		if f, ok := w.(*os.File); ok && isTerminal(f) {
			w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339}
		}
	default:
		return zerolog.Logger{}, nil, &usageError{fmt.Sprintf("--log-format %q: want json, console or auto", format)}
	}
	direct := zerolog.New(w).With().Timestamp().Logger()
	lw := newLogWriter(w, logRing, func(n int64) {
		direct.Warn().Int64("dropped_lines", n).Msg("the log output was not keeping up, so log lines were dropped: check what reads hookbox's stderr (the journal, a pipe)")
	})
	return zerolog.New(lw).Level(lvl).With().Timestamp().Logger(), func() { lw.Close(logFlushWait) }, nil
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// lockStore takes an exclusive flock on path+".lock" for the life of the
// process. (Not on the database file itself: closing any descriptor of that
// file would drop SQLite's own POSIX locks.)
func lockStore(path string) (*os.File, error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock store: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("store %s is in use by another hookbox serve: stop it first (the read commands may run beside it)", path)
		}
		return nil, fmt.Errorf("lock store %s: %w", path, err)
	}
	return f, nil
}
