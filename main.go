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
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"hookbox/admin"
	"hookbox/admission"
	"hookbox/config"
	"hookbox/dedupe"
	"hookbox/handlers"
	"hookbox/health"
	"hookbox/inbox"
	"hookbox/internal/cli"
	"hookbox/internal/live"
	"hookbox/internal/sdnotify"
	"hookbox/leader"
	"hookbox/metrics"
	"hookbox/order"
	"hookbox/postgres"
	"hookbox/provider"
	"hookbox/queue"
	"hookbox/receiver"
	"hookbox/refetch"
	"hookbox/replica"
	"hookbox/sqlite"
	"hookbox/web"
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
	// Leader, when set, says whether this serve may run the health
	// monitor now (a replica holding the leader lease); nil: always.
	Leader func(ctx context.Context) bool

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
	Health   *health.Monitor
	Receiver *receiver.Server
	Metrics  *metrics.Metrics
	// Refetch makes the fetchers of the targets with refetch, and counts
	// their fetches by outcome (Refetch.Counters).
	Refetch *refetch.Set
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

	// Replica is this serve's identity among the replicas of a store,
	// new at each start: PostgreSQL records it with each claim, and its
	// command targets get it as HOOKBOX_REPLICA.
	Replica replica.Process
	// Elector runs the work that must run on one replica at a time (the
	// sweeper, the alerter) under a leader lease: on PostgreSQL a row in
	// the store, renewed; on SQLite this serve always leads. Other parts
	// run theirs with Elector.Run(ctx, name, work).
	Elector *leader.Elector

	leaders sync.WaitGroup // the Elector.Run of each lease
	stopLed context.CancelFunc
	bg      sync.WaitGroup // the notification listener
	web     *web.Handler   // the UI and the API, on the admin routes
	storeID string         // the store's identity: sqlite.RealPath, or the URL without its password
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
	health.Store
	QueuedByTarget(ctx context.Context) (map[string]int64, error)
	Waiting(ctx context.Context) (int64, error)
	Ping(ctx context.Context) error
	Running(ctx context.Context) ([]queue.RunningKey, error)
	GetEvent(ctx context.Context, id int64) (dedupe.Stored, error)
	// Pause and Resume hold and release a target's deliveries (hookbox
	// pause, resume); queue.Store's Paused lists the paused targets.
	Pause(ctx context.Context, target string, now time.Time) (queue.PauseResult, error)
	Resume(ctx context.Context, target string, now time.Time) (queue.PauseResult, error)
	SetOrder(lanes map[string]order.Lane)
	LaneStats(ctx context.Context) (queue.LaneStats, error)
	ReleaseLanes(ctx context.Context, now time.Time) (int64, error)
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
	if m.Replica, err = replica.Self(); err != nil {
		return err
	}
	m.Admin = admin.New(admin.Config{Token: m.Config.Admin.Token, Logger: m.component("admin")})
	if !m.LocalSink && m.Config.Admin.Listen != "" {
		if err := m.Admin.Listen(m.Config.Admin.Listen); err != nil {
			return err
		}
	}
	if err := m.openStore(ctx); err != nil {
		return err
	}
	rlog := m.component("replica")
	// Only replicas sharing a PostgreSQL store tell one another apart.
	ev := rlog.Debug()
	if m.PG != nil {
		ev = rlog.Info()
	}
	ev.Str("replica", m.Replica.ID).Msg("replica identity")
	if err := m.buildDelivery(); err != nil {
		return err
	}
	if err := m.buildReceiver(); err != nil {
		return err
	}
	for _, t := range m.Config.Targets {
		if t.Rate.PerSecond() > 0 {
			m.Metrics.InitThrottled(t.Name, queue.ThrottledRate)
		}
		if t.Concurrency > 0 {
			m.Metrics.InitThrottled(t.Name, queue.ThrottledConcurrency)
		}
	}
	if m.Alerter != nil {
		m.Metrics.InitAlerts(append([]string{"dead"}, m.Health.On()...))
	}
	if err := m.Metrics.RegisterState(metrics.State{
		Alarms: m.Health.Firing, Paused: m.Store.Paused, Targets: m.Config.TargetNames(),
		Lanes: m.Store.LaneStats, Refetches: m.Refetch.Counters.ByOutcome,
		Leader: m.Elector.Leader, Leases: []string{"sweeper", "alerter", "health"}, Now: m.Now,
	}); err != nil {
		return err
	}
	m.mountWeb()
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
	if n, err := m.Store.ReleaseLanes(ctx, m.Now()); err != nil {
		return err
	} else if n > 0 {
		qlog.Warn().Int64("deliveries", n).Msg("deliveries waiting in the lanes of targets no longer ordered run now, unordered")
	}
	if m.PG != nil {
		m.listen(ctx)
	}
	if err := m.Pool.Start(ctx); err != nil {
		return err
	}
	m.lead(ctx)
	m.Health.Start(ctx)
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

// listen starts the listener of the other replicas' announcements: new
// work wakes the pool, a lease given up wakes its elector. While it is
// down the pool looks for work every second.
func (m *Main) listen(ctx context.Context) {
	m.Pool.Listening(false)
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		m.PG.Listen(ctx, postgres.Listener{
			Due:    m.Pool.Notify,
			Leader: m.Elector.Wake,
			Up: func(up bool) {
				m.Pool.Listening(up)
				m.Pool.Notify() // to take up the new poll at once
			},
		})
	}()
}

// lead runs the sweeper and the alerter, each under its leader lease.
func (m *Main) lead(ctx context.Context) {
	ctx, m.stopLed = context.WithCancel(ctx)
	run := func(name string, start func(context.Context), stop func()) {
		m.leaders.Add(1)
		go func() {
			defer m.leaders.Done()
			m.Elector.Run(ctx, name, func(ctx context.Context) {
				start(ctx)
				<-ctx.Done()
				stop()
			})
		}()
	}
	run("sweeper", m.Sweeper.Start, m.Sweeper.Stop)
	if m.Alerter != nil {
		run("alerter", m.Alerter.Start, m.Alerter.Stop)
	}
	// The health monitor runs on every replica (its status serves the
	// API anywhere) and checks and sends only while this one holds the
	// "health" lease (Config.Leader).
	run("health", func(context.Context) {}, func() {})
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
	m.Store.SetOrder(m.Config.Lanes())
	m.buildMetrics()
	m.buildBudget()
	r := m.Config.Retention
	m.Sweeper = &dedupe.Sweeper{Store: m.Store, Interval: r.Interval.D(), Payloads: r.Payloads.D(), Keys: r.Dedupe.D(),
		First: m.FirstSweep, Now: m.Now, Logger: m.component("sweeper")}
	return nil
}

// openPostgres opens the PostgreSQL store at the config's URL, as this
// replica: several serve replicas may share it.
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
	if m.PG, err = postgres.Open(ctx, u, postgres.Options{Replica: m.Replica, Logger: m.component("store")}); err != nil {
		return err
	}
	m.Store = m.PG
	m.Elector = &leader.Elector{Store: m.PG, Holder: m.Replica.ID, Logger: m.component("leader")}
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
	m.Elector = &leader.Elector{Holder: m.Replica.ID, Logger: m.component("leader")} // the one serve of the store
	return nil
}

// buildDelivery builds the targets, the alerter and the worker pool.
func (m *Main) buildDelivery() error {
	cfg := m.Config
	m.Refetch = refetch.NewSet()
	targets, err := handlers.TargetsWith(cfg, m.storeID, handlers.Options{Refetch: m.Refetch, Headers: m.eventHeaders, Replica: m.Replica.ID})
	if err != nil {
		return err
	}
	notifier := handlers.Notifier(cfg.Alert)
	if notifier != nil {
		m.Alerter = queue.NewAlerter(m.Store, notifier, m.component("alert"), m.Now)
		if m.AlertBackoff > 0 {
			m.Alerter.Backoff.Base = m.AlertBackoff
		}
		m.Alerter.OnOutcome = m.Metrics.ObserveAlert
	}
	m.buildHealth(notifier)
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
		Poll:   cfg.Delivery.Poll.D(),
		Now:    m.Now,
		Logger: m.component("queue"),

		OnAttempt:   m.Metrics.ObserveAttempt,
		OnThrottled: m.Metrics.ObserveThrottled,
	})
	return nil
}

// eventHeaders reads a stored event's headers, for the fetches that
// need them (Shopify's shop).
func (m *Main) eventHeaders(ctx context.Context, id int64) (http.Header, error) {
	e, err := m.Store.GetEvent(ctx, id)
	if err != nil {
		return nil, err
	}
	return e.Headers, nil
}

// healthLeader says when the health monitor may check and send: Main.Leader
// if set (tests), else while this replica holds the "health" lease (lead
// campaigns for it; on SQLite the one serve holds it).
func (m *Main) healthLeader() func(context.Context) bool {
	if m.Leader != nil || m.PG == nil {
		return m.Leader
	}
	return func(context.Context) bool { return m.Elector.Leader("health") }
}

// buildHealth builds the health monitor, sending through notifier (nil:
// the alarms are kept and shown, nothing is sent).
func (m *Main) buildHealth(notifier queue.Notifier) {
	h := m.Config.Health
	hc := health.Config{
		Window:           h.Window.D(),
		DuplicateRate:    h.DuplicateRate.F(),
		MinVolume:        h.MinVolume,
		OldestQueued:     h.OldestQueued.D(),
		ReceiveToDoneP99: h.ReceiveToDoneP99.D(),
		TargetFailing:    h.TargetFailing,
		Interval:         h.Interval.D(),
		Targets:          m.Config.TargetNames(),
		Leader:           m.healthLeader(),
		OnOutcome:        m.Metrics.ObserveAlert,
		Backoff:          queue.Backoff{Base: m.AlertBackoff},
		Now:              m.Now,
		Logger:           m.component("health"),
	}
	for _, s := range m.Config.Sources {
		hc.Sources = append(hc.Sources, health.Source{Name: s.Name, Silence: s.Silence.D()})
	}
	m.Health = health.New(m.Store, notifier, hc)
}

// buildReceiver builds the webhook receiver on the inbox.
func (m *Main) buildReceiver() error {
	cfg := m.Config
	sources, err := receiver.Sources(cfg.Sources)
	if err != nil {
		return err
	}
	var wake inbox.Waker = m.Pool
	if m.PG != nil {
		wake = wakeAll{m.Pool.Notify, m.PG.Wake} // this replica's pool, and the others'
	}
	ingest := inbox.New(m.Store, inbox.NewRouter(cfg.Targets), wake)
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
	if m.web != nil {
		m.web.Shutdown() // the UI's live tails end, or they hold the listeners' shutdown
	}
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
		if m.PG != nil {
			m.PG.Wake() // what it released, the other replicas run
		}
	}
	if m.stopLed != nil {
		m.stopLed() // stops the sweeper and the alerter, and gives their leases up
		m.leaders.Wait()
	}
	if m.Alerter != nil {
		m.Alerter.Stop()
	}
	if m.Sweeper != nil {
		m.Sweeper.Stop()
	}
	if m.Health != nil {
		m.Health.Stop()
	}
	if m.cancel != nil {
		m.cancel()
	}
	m.bg.Wait()
	if m.Store != nil {
		keep(m.Store.Close())
	}
	if m.lock != nil {
		keep(m.lock.Close()) // releases the flock
		m.lock = nil
	}
	return first
}

// wakeAll wakes each of its parts.
type wakeAll []func()

// Notify calls each.
func (w wakeAll) Notify() {
	for _, f := range w {
		f()
	}
}

func (m *Main) component(name string) zerolog.Logger {
	return m.Logger.With().Str("component", name).Logger()
}

// buildMetrics makes the metrics on a registry of this Main's own, with
// the collectors that read the queue and the store at scrape time.
func (m *Main) buildMetrics() {
	m.Metrics = metrics.New(m.Now)
	read := func() metrics.CommitStats {
		s := m.DB.Stats()
		return metrics.CommitStats{Commits: s.Commits, Writes: s.Writes, FailedCommits: s.FailedCommit}
	}
	if m.PG != nil {
		read = func() metrics.CommitStats {
			s := m.PG.Stats()
			return metrics.CommitStats{Commits: s.Commits, Writes: s.Writes, FailedCommits: s.FailedCommit}
		}
	}
	qc := &metrics.QueueCollector{Store: m.Store, Targets: m.Config.TargetNames(), Now: m.Now}
	qc.Warm()
	m.Metrics.Registry.MustRegister(metrics.StoreCollector{Read: read}, qc)
	sources := make([]string, len(m.Config.Sources))
	for i, s := range m.Config.Sources {
		sources[i] = s.Name
	}
	m.Metrics.Init(sources, m.Config.TargetNames())
	m.Admin.Mount("GET /metrics", m.Metrics.Handler(m.component("metrics")))
}

// buildBudget makes the admission budgets of [store].
func (m *Main) buildBudget() {
	cfg := m.Config.Store
	m.Budget = &admission.Budget{
		MaxQueued:   cfg.MaxQueued,
		Waiting:     m.Store.Waiting,
		MinFreeDisk: uint64(max(0, cfg.MinFreeDisk.Int())),
		Interval:    m.BudgetInterval,
		FreeDisk:    m.FreeDisk,
		Logger:      m.component("admission"),
	}
	if m.DB != nil {
		m.Budget.Dir = filepath.Dir(m.storeID)
	}
}

// startLive starts the liveness checks: a write through the store's
// writer, and the worker pool. With systemd's watchdog, each passing
// round pets it, at least three times per WatchdogSec.
func (m *Main) startLive(ctx context.Context) {
	// A write waits behind the batch being committed: under a burst, a
	// second or two. The check allows 5 s before it says the writer is
	// stuck, and never longer than a third of the watchdog's period.
	every, timeout := 2*time.Second, 5*time.Second
	if m.LiveInterval > 0 {
		every = m.LiveInterval
	}
	if m.Watchdog > 0 {
		every, timeout = min(every, m.Watchdog/3), min(timeout, m.Watchdog/3)
	}
	m.Live = &live.Monitor{
		Checks: []live.Check{
			{Name: "store", Run: m.Store.Ping},
			{Name: "workers", Run: m.Pool.Alive},
		},
		Interval: every,
		Timeout:  timeout,
		Logger:   m.component("live"),
	}
	if m.Watchdog > 0 {
		m.Live.OnPass = func() { m.notify("WATCHDOG=1") }
	}
	m.Live.Start(ctx)
}

// ready is /readyz's verdict: the liveness checks pass and no admission
// budget is exceeded.
func (m *Main) ready() error {
	if err := m.Live.Err(); err != nil {
		return err
	}
	if err := m.Budget.Admit(); err != nil {
		var e *admission.Exceeded
		if errors.As(err, &e) {
			return fmt.Errorf("budget: %w", err)
		}
		return err
	}
	return nil
}

// fallback is what the webhook listener serves beside its own routes:
// the admin routes for the local sink (one loopback listener for all),
// nothing with a config.
func (m *Main) fallback() http.Handler {
	if m.LocalSink || m.ShareListener {
		return m.Admin.Handler()
	}
	return nil
}

// notify tells systemd state, when it asked to be told.
func (m *Main) notify(state string) {
	if err := m.Notifier.Notify(state); err != nil {
		log := m.component("systemd")
		log.Warn().Err(err).Msg("could not notify systemd")
	}
}

// AdminAddr is the admin listener's bound address, "" when it is off.
func (m *Main) AdminAddr() string {
	if m.Admin == nil || m.Admin.Addr() == nil {
		return ""
	}
	return m.Admin.Addr().String()
}

// WebHandler is the web UI and the JSON API over the running serve's
// store, for a listener to mount at / (they answer / and /api/). It
// checks no token: whoever mounts it does. Call it after Run; register
// its Shutdown with the listener's server (RegisterOnShutdown).
func (m *Main) WebHandler() *web.Handler {
	var store web.Store
	if m.PG != nil {
		store = m.PG
	} else {
		store = m.DB
	}
	sources := make(map[string]provider.Options, len(m.Config.Sources))
	for _, s := range m.Config.Sources {
		sources[s.Name] = s.ProviderOptions()
	}
	o := web.Options{Targets: m.Config.Targets, Sources: sources, Now: m.Now, Logger: m.component("web"),
		AnyHost: m.Config.Admin.Token != "", Sink: m.LocalSink}
	if m.Health != nil {
		o.Health = m.Health
	}
	return web.New(store, o)
}

// mountWeb serves the web UI and the JSON API on the admin routes (the
// admin listener, or the local sink's): at / and under /api/. Behind a
// token it answers any Host (a proxy forwards its own name); without one,
// only loopback names and addresses, against DNS rebinding.
func (m *Main) mountWeb() {
	h := m.WebHandler()
	m.web = h
	m.Admin.Mount("/", h)
}
