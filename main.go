// Command hookbox is a durable inbox for webhooks: it verifies, dedupes and
// stores every webhook in SQLite before answering 200, then delivers each
// one to local commands and URLs with retries and a dead-letter table.
//
// This file holds main and Main, the running serve's parts wired by hand;
// each subcommand has a file of its own (serve.go, events.go, …), and
// help.go lists them.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"hookbox/admin"
	"hookbox/admission"
	"hookbox/config"
	"hookbox/dedupe"
	"hookbox/handlers"
	"hookbox/inbox"
	"hookbox/internal/cli"
	"hookbox/internal/live"
	"hookbox/internal/sdnotify"
	"hookbox/metrics"
	"hookbox/postgres"
	"hookbox/queue"
	"hookbox/receiver"
	"hookbox/sqlite"
)

func main() {
	env := cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
	os.Exit(cli.ExitCode(Execute(context.Background(), env, os.Args[1:]), os.Stderr))
}

// Main holds the configuration and the long-lived parts of a running
// hookbox serve, wired by hand.
type Main struct {
	Config    config.Config
	LocalSink bool // no config file: accept anything, deliver nowhere
	Logger    zerolog.Logger
	Now       func() time.Time
	// OnAnswer, if set, is told how each webhook request was answered
	// (the local sink's live lines).
	OnAnswer func(receiver.Answer)
	// AlertBackoff, when set, replaces the alerter's first wait between
	// tries of a failed alert (it doubles after each further failure).
	AlertBackoff time.Duration
	// FirstSweep is how long after the start the first retention sweep
	// runs (default a minute, or retention.interval if shorter).
	FirstSweep time.Duration
	// RefusedLogBurst, when set, replaces how many refused-signature
	// warnings are logged in each 10 s window (10).
	RefusedLogBurst int

	// Getenv reads the environment: [store] url_env (default os.Getenv).
	Getenv func(string) string

	// Store is the store, whichever engine the config names: the pool,
	// the alerter, the sweeper, the inbox and the metrics each reach it
	// through the interface their package declares. DB is the same store
	// when it is SQLite, PG when it is PostgreSQL; the other is nil.
	Store    Store
	DB       *sqlite.DB
	PG       *postgres.DB
	Pool     *queue.Pool
	Alerter  *queue.Alerter
	Sweeper  *dedupe.Sweeper
	Receiver *receiver.Server
	Metrics  *metrics.Metrics
	// Admin serves /metrics (and what is mounted on it: the UI, the API)
	// on [admin] listen, or, for the local sink, beside the webhooks on
	// the sink's listener.
	Admin  *admin.Server
	Budget *admission.Budget
	Live   *live.Monitor

	// Notifier, when set, tells systemd READY=1 once serving, WATCHDOG=1
	// after each passing liveness round if Watchdog is set (systemd's
	// WatchdogSec), and STOPPING=1 at Close.
	Notifier *sdnotify.Notifier
	Watchdog time.Duration
	// ShareListener serves the admin routes on the webhook listener, as
	// the local sink does: only the bench server (on loopback) sets it,
	// to read /metrics where it sends.
	ShareListener bool
	// BudgetInterval, when set, replaces how often the admission budgets
	// are read (1s).
	BudgetInterval time.Duration
	// FreeDisk, when set, replaces how the free space under the store is
	// read (statfs).
	FreeDisk func(dir string) (uint64, error)
	// LiveInterval, when set, replaces how often the liveness checks run
	// (2s, or a third of systemd's WatchdogSec if shorter).
	LiveInterval time.Duration

	storeID string // the store's identity: sqlite.RealPath, or the URL without its password
	lock    *os.File
	cancel  context.CancelFunc
	serveCh chan error
	adminCh chan error
}

// Store is what a running serve needs of a store engine; sqlite.DB and
// postgres.DB have it.
type Store interface {
	inbox.Store
	queue.Store
	queue.AlertStore
	dedupe.Store
	metrics.Queue
	QueuedByTarget(ctx context.Context) (map[string]int64, error)
	Waiting(ctx context.Context) (int64, error)
	Ping(ctx context.Context) error
	Running(ctx context.Context) ([]queue.RunningKey, error)
	Close() error
}

// NewMain returns a Main for cfg.
func NewMain(cfg config.Config, logger zerolog.Logger) *Main {
	return &Main{Config: cfg, Logger: logger, Now: time.Now, Getenv: os.Getenv}
}

// Run binds the webhook listener, opens the store, starts the workers, the
// alerter and the sweeper, and starts serving HTTP. It returns once the
// listener is bound; Close stops everything.
func (m *Main) Run(ctx context.Context) (err error) {
	ctx, m.cancel = context.WithCancel(ctx)
	defer func() {
		if err != nil {
			m.Close()
		}
	}()
	// Bound first: a serve that cannot listen fails before it creates,
	// recovers, claims or runs anything.
	ln, err := listen(m.Config.Server.Listen)
	if err != nil {
		return err
	}
	defer func() {
		if m.Receiver == nil {
			ln.Close()
		}
	}()
	m.Admin = admin.New(admin.Config{Token: m.Config.Admin.Token, Logger: m.component("admin")})
	if !m.LocalSink && m.Config.Admin.Listen != "" {
		if err := m.Admin.Listen(m.Config.Admin.Listen); err != nil {
			return err
		}
	}
	if err := m.openStore(ctx); err != nil {
		return err
	}
	if err := m.buildDelivery(); err != nil {
		return err
	}
	if err := m.buildReceiver(); err != nil {
		return err
	}
	m.Receiver.UseListener(ln)

	queue.WarnUnknownTargets(ctx, m.Store.QueuedByTarget, m.Config.TargetNames(), m.component("queue"))
	qlog := m.component("queue")
	for _, note := range handlers.ProgramNotes(m.Config) {
		qlog.Warn().Msg(note)
	}
	// Before the pool retries what the previous process left running: a
	// command attempt it started may still run, and must not overlap its
	// rerun.
	handlers.StopRunningLeftovers(ctx, m.storeID, m.Store.Running, qlog)
	if err := m.Pool.Start(ctx); err != nil {
		return err
	}
	if m.Alerter != nil {
		m.Alerter.Start(ctx)
	}
	m.Sweeper.Start(ctx)
	m.Budget.Start(ctx)
	m.startLive(ctx)
	m.serveCh = make(chan error, 2) // the receiver's, and the admin listener's failure
	go func() { m.serveCh <- m.Receiver.Serve() }()
	if m.Admin.Addr() != nil {
		m.adminCh = make(chan error, 1)
		go func() {
			if err := m.Admin.Serve(); err != nil {
				m.serveCh <- err
			}
			close(m.adminCh)
		}()
	}
	m.notify("READY=1\nSTATUS=receiving webhooks")
	return nil
}

// listen binds addr, saying what to do when another program has it.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("listen %s: address already in use (another hookbox serve?): pick another port with --listen 127.0.0.1:PORT, or [server] listen in the config", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return ln, nil
}

// openStore opens the store the config names, SQLite or PostgreSQL.
func (m *Main) openStore(ctx context.Context) error {
	if m.Config.Store.PostgreSQL() {
		if err := m.openPostgres(ctx); err != nil {
			return err
		}
	} else if err := m.openSQLite(); err != nil {
		return err
	}
	m.buildMetrics()
	m.buildBudget()
	r := m.Config.Retention
	m.Sweeper = &dedupe.Sweeper{Store: m.Store, Interval: r.Interval.D(), Payloads: r.Payloads.D(), Keys: r.Dedupe.D(),
		First: m.FirstSweep, Now: m.Now, Logger: m.component("sweeper")}
	return nil
}

// openPostgres opens the PostgreSQL store at the config's URL. One serve
// per database, for now: a second one would recover the first one's
// running deliveries at its start.
func (m *Main) openPostgres(ctx context.Context) error {
	cfg := m.Config.Store
	getenv := m.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	u, err := cfg.DatabaseURL(getenv)
	if err != nil {
		return err
	}
	m.storeID = postgres.Redact(u)
	if m.PG, err = postgres.Open(ctx, u, postgres.Options{Logger: m.component("store")}); err != nil {
		return err
	}
	m.Store = m.PG
	return nil
}

// openSQLite opens the SQLite store, one serve per store however its path
// is spelled.
func (m *Main) openSQLite() error {
	cfg := m.Config.Store
	if err := os.MkdirAll(filepath.Dir(cfg.Path), 0o750); err != nil {
		return fmt.Errorf("store directory: %w", err)
	}
	var err error
	// The store's identity as its command targets see it (HOOKBOX_STORE).
	if m.storeID, err = sqlite.RealPath(cfg.Path); err != nil {
		return fmt.Errorf("store path %s: %w", cfg.Path, err)
	}
	if m.lock, err = sqlite.Lock(m.storeID); err != nil {
		return err
	}
	m.DB, err = sqlite.Open(cfg.Path, sqlite.Options{Synchronous: cfg.Synchronous, Logger: m.component("store")})
	if err != nil {
		return err
	}
	m.Store = m.DB
	return nil
}

// buildDelivery builds the targets, the alerter and the worker pool.
func (m *Main) buildDelivery() error {
	cfg := m.Config
	targets, err := handlers.Targets(cfg, m.storeID)
	if err != nil {
		return err
	}
	if notifier := handlers.Notifier(cfg.Alert); notifier != nil {
		m.Alerter = queue.NewAlerter(m.Store, notifier, m.component("alert"), m.Now)
		if m.AlertBackoff > 0 {
			m.Alerter.Backoff.Base = m.AlertBackoff
		}
		m.Alerter.OnOutcome = m.Metrics.ObserveAlert
	}
	m.Pool = queue.NewPool(m.Store, queue.PoolConfig{
		Workers:     cfg.Delivery.Workers,
		MaxAttempts: cfg.Delivery.MaxAttempts,
		Lease:       cfg.Delivery.Lease.D(),
		Grace:       cfg.Delivery.Grace.D(),
		Retry:       queue.Backoff{Base: cfg.Delivery.Backoff.D(), Max: cfg.Delivery.MaxBackoff.D(), Jitter: 0.2},
		Targets:     targets,
		Alerting:    m.Alerter != nil,
		OnDead: func() {
			if m.Alerter != nil {
				m.Alerter.Wake()
			}
		},
		OnDone: m.Metrics.ObserveDone,
		Now:    m.Now,
		Logger: m.component("queue"),

		OnAttempt: m.Metrics.ObserveAttempt,
	})
	return nil
}

// buildReceiver builds the webhook receiver on the inbox.
func (m *Main) buildReceiver() error {
	cfg := m.Config
	sources, err := receiver.Sources(cfg.Sources)
	if err != nil {
		return err
	}
	ingest := inbox.New(m.Store, inbox.NewRouter(cfg.Targets), m.Pool)
	m.Receiver = receiver.New(receiver.Config{
		Sources:           sources,
		AnySource:         m.LocalSink,
		MaxBody:           cfg.Server.MaxBody.Int(),
		ReadHeaderTimeout: cfg.Server.ReadHeaderTimeout.D(),
		ReadTimeout:       cfg.Server.ReadTimeout.D(),
		WriteTimeout:      cfg.Server.WriteTimeout.D(),
		IdleTimeout:       cfg.Server.IdleTimeout.D(),
		MaxHeaderBytes:    int(cfg.Server.MaxHeaderBytes.Int()),
		Observe:           m.Metrics.ObserveAnswer,
		Admit:             m.Budget.Admit,
		Ready:             m.ready,
		Fallback:          m.fallback(),
		Now:               m.Now,
		RefusedLogBurst:   m.RefusedLogBurst,
		OnAnswer:          m.OnAnswer,
		Logger:            m.component("receiver"),
	}, ingest)
	conflicts := &m.Receiver.Counters.Conflicts
	m.Metrics.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "hookbox_duplicate_conflicts_total",
		Help: "Redeliveries whose body differed from the stored one (the first is kept).",
	}, func() float64 { return float64(conflicts.Load()) }))
	return nil
}

// Addr is the receiver's bound address.
func (m *Main) Addr() string { return m.Receiver.Addr().String() }

// Err returns a channel that yields the HTTP server's error if it stops on its own.
func (m *Main) Err() <-chan error { return m.serveCh }

// Close stops accepting requests, lets in-flight requests commit, stops the
// workers (finishing or releasing running attempts), the alerter and the
// sweeper, and closes the store. It returns the first error.
func (m *Main) Close() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	m.notify("STOPPING=1")
	if m.Receiver != nil && m.serveCh == nil {
		keep(m.Receiver.Unbind())
	}
	if m.Admin != nil && m.adminCh == nil {
		keep(m.Admin.Unbind())
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
	if m.adminCh != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		keep(m.Admin.Shutdown(ctx))
		cancel()
		<-m.adminCh
	}
	if m.Live != nil {
		m.Live.Stop()
	}
	if m.Budget != nil {
		m.Budget.Stop()
	}
	if m.Pool != nil {
		m.Pool.Stop()
	}
	if m.Alerter != nil {
		m.Alerter.Stop()
	}
	if m.Sweeper != nil {
		m.Sweeper.Stop()
	}
	if m.cancel != nil {
		m.cancel()
	}
	if m.Store != nil {
		keep(m.Store.Close())
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
