package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"hookbox/config"
	"hookbox/internal/cli"
	"hookbox/internal/harden"
	"hookbox/internal/logging"
	"hookbox/internal/sdnotify"
	"hookbox/receiver"
)

const serveSummary = "receive, store and deliver webhooks until SIGINT or SIGTERM"

// ServeCommand is `hookbox serve`: the receiver, the worker pool, the
// alerter and the sweeper, until a signal.
type ServeCommand struct{ cli.Env }

// Run runs hookbox until SIGINT, SIGTERM or SIGHUP (a closed terminal;
// there is no reload); a second signal exits at once.
func (c *ServeCommand) Run(ctx context.Context, args []string) error {
	fs := cli.NewFlagSet(c.Env, "serve", "", serveSummary)
	cfgPath := fs.String("config", "", "config `FILE` (default $HOOKBOX_CONFIG; none: the local sink)")
	listenAddr := fs.String("listen", "", "listen on this `ADDR` instead of [server] listen; without a config, a loopback one (default 127.0.0.1:8080)")
	level := fs.String("log-level", "info", "`LEVEL`: debug, info, warn or error")
	format := fs.String("log-format", "auto", "`FORMAT`: json, console or auto (console on a terminal)")
	fs.Explain(`Without a config, serve is a local sink: it accepts any POST /hooks/{name}
unsigned on loopback, stores every request in ./hookbox.db, delivers nowhere,
and prints a line for each request it answers.`)
	if err := fs.Parse(args, 0); err != nil {
		return err
	}
	cfg, local, err := c.LoadConfig(*cfgPath, true)
	if err != nil {
		return err
	}
	if *listenAddr != "" {
		if local && !config.IsLoopback(*listenAddr) {
			return cli.Usagef("serve: --listen %q: without a config, hookbox listens on loopback only (127.0.0.1:PORT, [::1]:PORT or localhost:PORT)", *listenAddr)
		}
		cfg.Server.Listen = *listenAddr
	}
	logger, closeLog, err := logging.New(c.Stderr, *level, *format)
	if err != nil {
		return cli.Usagef("serve: %v", err)
	}
	defer closeLog()
	if err := harden.Process(); err != nil {
		logger.Warn().Err(err).Msg("could not hide hookbox's environment (its secrets) from other processes of its user, command targets included")
	}
	m := NewMain(cfg, logger)
	m.LocalSink = local
	m.Getenv = c.Getenv
	if m.Notifier, err = sdnotify.New(c.Getenv("NOTIFY_SOCKET")); err != nil {
		logger.Warn().Err(err).Msg("not notifying systemd")
	}
	if every, ok, err := sdnotify.WatchdogInterval(c.Getenv, os.Getpid()); err != nil {
		logger.Warn().Err(err).Msg("not petting systemd's watchdog")
	} else if ok {
		m.Watchdog = every
	}
	if local {
		lines, closeLines := logging.Lines(c.Stderr)
		defer closeLines()
		m.OnAnswer = func(a receiver.Answer) { fmt.Fprint(lines, sinkLine(a)) }
	}

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	if !signal.Ignored(syscall.SIGHUP) { // under nohup it stays ignored
		signal.Notify(sigs, syscall.SIGHUP)
	}
	defer signal.Stop(sigs)

	if err := m.Run(ctx); err != nil {
		return err
	}
	c.started(m, *format == "json")
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

// started logs the start line and, for the local sink, says on stdout
// where to send and where to look (not under --log-format json, whose
// readers want JSON).
func (c *ServeCommand) started(m *Main, jsonLogs bool) {
	addr := m.Addr()
	cfg := m.Config
	if !m.LocalSink {
		e := m.Logger.Info().Str("version", version).Str("listen", "http://"+addr).Str("store", cfg.Store.Name()).
			Int("sources", len(cfg.Sources)).Int("targets", len(cfg.Targets))
		if a := m.AdminAddr(); a != "" {
			e = e.Str("admin", "http://"+a).Bool("admin_token", cfg.Admin.Token != "")
		}
		e.Msg("hookbox listening")
		return
	}
	m.Logger.Info().Str("version", version).Str("listen", "http://"+addr).Str("store", cfg.Store.Name()).
		Msg("hookbox local sink listening (no config): storing every request, delivering nowhere")
	if jsonLogs {
		return
	}
	fmt.Fprintf(c.Stdout, `hookbox %s: local sink (no config), storing every request in %s, delivering nowhere.
  send:  curl -sS http://%s/hooks/demo -H 'Content-Type: application/json' -d '{"id":"evt_1","type":"demo.created"}'
  look:  http://%s/   (the web UI: the live list, each request, replay)
         hookbox events            (or: go run . events)
         hookbox event --body ID   (the raw bytes)
         http://%s/metrics
  Any /hooks/{name} is accepted unsigned; the event id comes from the usual headers
  (webhook-id, X-GitHub-Delivery, Idempotency-Key, ...) or a JSON "id", else one is generated.
  Each request is printed below as it is answered.
  Give a config (--config or $HOOKBOX_CONFIG) to verify signatures and deliver.
`, version, cfg.Store.Name(), addr, addr, addr)
}

// sinkLine is the local sink's line for one answered request: time,
// source, event id, type, what it was answered, body size.
func sinkLine(a receiver.Answer) string {
	result := a.Result
	if result == "" {
		result = fmt.Sprintf("%d %s", a.Status, strings.ToLower(http.StatusText(a.Status)))
	}
	return fmt.Sprintf("%s  %-16s %-28s %-24s %-10s %s\n", a.At.Format("15:04:05"),
		cli.Printable(a.Source), cli.Printable(cli.OrDash(a.EventID)), cli.Printable(cli.OrDash(a.Type)), result, size(a.Size))
}

// size is n bytes for a person: 512 B, 1.5 KiB, 2.0 MiB.
func size(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
