package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"hookbox/config"
	"hookbox/dedupe"
	"hookbox/handlers"
	"hookbox/queue"
	"hookbox/receiver"
)

// ingester joins the receiver to the event store and wakes the workers
// after a commit that queued work.
type ingester struct {
	events *dedupe.Store
	routes *router
	pool   *queue.Pool
}

func (i *ingester) Ingest(ctx context.Context, e *receiver.Event) (receiver.Result, error) {
	ev := dedupe.Event{
		Source:      e.Source,
		EventID:     e.EventID,
		Type:        e.Type,
		ReceivedAt:  e.ReceivedAt,
		ContentType: e.ContentType,
		Headers:     e.Headers,
		Body:        e.Body,
	}
	res, err := i.events.Ingest(ctx, &ev)
	if err != nil {
		return receiver.Result{}, err
	}
	if (!res.Duplicate && i.routes.any(ev.Source)) || res.Revived > 0 {
		i.pool.Notify()
	}
	return receiver.Result{Duplicate: res.Duplicate, Conflict: res.Conflict}, nil
}

// router finds the targets of an event.
type router struct {
	bySource map[string][]config.Target
}

func newRouter(cfg config.Config) *router {
	r := &router{bySource: map[string][]config.Target{}}
	for _, t := range cfg.Targets {
		for _, s := range t.SourceNames() {
			r.bySource[s] = append(r.bySource[s], t)
		}
	}
	return r
}

func (r *router) any(source string) bool { return len(r.bySource[source]) > 0 }

func (r *router) targets(source, typ string) []string {
	var names []string
	for _, t := range r.bySource[source] {
		if t.Matches(source, typ) {
			names = append(names, t.Name)
		}
	}
	return names
}

// buildSources turns [[source]] into receiver sources, each built from
// its provider.
func buildSources(cfg config.Config) ([]receiver.Source, error) {
	out := make([]receiver.Source, len(cfg.Sources))
	for i, s := range cfg.Sources {
		var err error
		if out[i], err = receiver.NewSource(s.Name, s.MaxBody.Int(), s.ProviderOptions()); err != nil {
			return nil, fmt.Errorf("source %s: %w", s.Name, err)
		}
	}
	return out, nil
}

// deliverer is what both target kinds offer.
type deliverer interface {
	Deliver(ctx context.Context, d handlers.Delivery) (handlers.Result, error)
}

// buildTargets turns [[target]] into queue targets. A command target's
// environment also names the target and the store (HOOKBOX_TARGET,
// HOOKBOX_STORE=store, from store.RealPath): that is how a restarted hookbox
// finds the processes of attempts its killed predecessor left running
// (stopLeftovers).
func buildTargets(cfg config.Config, store string) ([]queue.Target, error) {
	out := make([]queue.Target, 0, len(cfg.Targets))
	for _, t := range cfg.Targets {
		var h queue.Handler
		switch {
		case t.URL != "":
			h = handle(handlers.NewURL(t.URL, t.Timeout.D()), false)
		case len(t.Command) > 0:
			env := maps.Clone(t.Env)
			if env == nil {
				env = make(map[string]string, 2)
			}
			env["HOOKBOX_TARGET"], env["HOOKBOX_STORE"] = t.Name, store
			h = handle(handlers.NewCommand(t.Command, env, t.Timeout.D()), true)
		default:
			return nil, fmt.Errorf("target %s: neither url nor command", t.Name)
		}
		out = append(out, queue.Target{Name: t.Name, MaxAttempts: t.MaxAttempts, Handler: h})
	}
	return out, nil
}

// handle adapts a handlers target to the queue's Handler.
func handle(d deliverer, command bool) queue.Handler {
	return queue.HandlerFunc(func(ctx context.Context, j *queue.Job) queue.Outcome {
		res, err := d.Deliver(ctx, handlers.Delivery{
			EventID:     j.EventID,
			Source:      j.Source,
			Type:        j.Type,
			Attempt:     j.Attempt,
			ReceivedAt:  j.ReceivedAt,
			ContentType: j.ContentType,
			Body:        j.Body,
		})
		out := queue.Outcome{Err: err, HTTPStatus: res.Status, Output: res.Output}
		if command {
			code := res.ExitCode
			out.ExitCode = &code
		}
		var he *handlers.Error
		if errors.As(err, &he) {
			out.RetryAfter = he.RetryAfter
		}
		return out
	})
}

// alertNotifier sends alerts as JSON to a URL or on a command's stdin.
type alertNotifier struct {
	url *handlers.URL
	cmd *handlers.Command
}

func buildNotifier(a config.Alert) (queue.Notifier, error) {
	timeout := a.Timeout.D()
	switch {
	case a.URL != "":
		return &alertNotifier{url: handlers.NewURL(a.URL, timeout)}, nil
	case len(a.Command) > 0:
		return &alertNotifier{cmd: handlers.NewCommand(a.Command, nil, timeout)}, nil
	}
	return nil, nil
}

func (n *alertNotifier) Notify(ctx context.Context, a queue.Alert) error {
	body, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("encode alert: %w", err)
	}
	if n.url != nil {
		_, err = n.url.Post(ctx, "application/json", body)
	} else {
		_, err = n.cmd.Run(ctx, map[string]string{
			"HOOKBOX_ALERT_SOURCE":   a.Source,
			"HOOKBOX_ALERT_EVENT_ID": a.EventID,
			"HOOKBOX_ALERT_TARGET":   a.Target,
		}, body)
	}
	return err
}

// stopLeftovers ends the processes of command attempts that the previous
// process on this store left running when it died without stopping them
// (SIGKILL, a crash): their deliveries are still marked running, and the
// pool is about to run them again. Processes of finished deliveries (a
// daemon a target started on purpose) are left alone. Linux only: it reads
// /proc. store is the store's identity (store.RealPath).
func (m *Main) stopLeftovers(ctx context.Context, store string) {
	log := m.component("queue")
	const lookFailed = "could not look for commands left running by the previous process: one still running would overlap its delivery's rerun"
	procs, err := handlers.Leftovers(store)
	if err != nil || len(procs) == 0 {
		if err != nil {
			log.Warn().Err(err).Msg(lookFailed)
		}
		return
	}
	running, err := m.Queue.Running(ctx)
	if err != nil {
		log.Warn().Err(err).Msg(lookFailed)
		return
	}
	held := make(map[queue.RunningKey]bool, len(running))
	for _, r := range running {
		held[r] = true
	}
	var stale []handlers.Leftover
	for _, p := range procs {
		if held[queue.RunningKey{Source: p.Source, EventID: p.EventID, Target: p.Target}] {
			stale = append(stale, p)
		}
	}
	if len(stale) == 0 {
		return
	}
	for _, p := range stale {
		log.Warn().Int("pid", p.PID).Str("source", p.Source).Str("event_id", p.EventID).Str("target", p.Target).
			Msg("stopping a command left running by the previous process, before its delivery runs again")
	}
	handlers.StopLeftovers(stale, handlers.KillGrace)
}

// programNotes says, for each command in cfg (targets and the alert) whose
// program this process cannot run as things stand, why: missing, not
// executable, or a relative path that follows serve's working directory.
// check prints them as notes and serve logs them as warnings; neither
// refuses the config, which may be checked on another machine or before
// the program is installed.
func programNotes(cfg config.Config) []string {
	type cmd struct {
		what, program string
		run           *handlers.Command // looks the program up as a run does
	}
	var cmds []cmd
	for _, t := range cfg.Targets {
		if len(t.Command) > 0 {
			cmds = append(cmds, cmd{fmt.Sprintf("target %q", t.Name), t.Command[0], handlers.NewCommand(t.Command, t.Env, 0)})
		}
	}
	if len(cfg.Alert.Command) > 0 {
		cmds = append(cmds, cmd{"the alert", cfg.Alert.Command[0], handlers.NewCommand(cfg.Alert.Command, nil, 0)})
	}
	var notes []string
	for _, c := range cmds {
		if c.program == "" {
			continue // the config check names it
		}
		if !strings.Contains(c.program, "/") {
			if _, err := c.run.Program(); err != nil {
				notes = append(notes, fmt.Sprintf("%s runs %q: %v; give its absolute path", c.what, c.program, errors.Unwrap(err)))
			}
			continue
		}
		if !filepath.IsAbs(c.program) {
			notes = append(notes, fmt.Sprintf("%s runs %q, a relative path: it follows serve's working directory; give an absolute path", c.what, c.program))
		}
		switch fi, err := os.Stat(c.program); {
		case err != nil:
			notes = append(notes, fmt.Sprintf("%s runs %s: %v", c.what, c.program, errors.Unwrap(err)))
		case !fi.Mode().IsRegular():
			notes = append(notes, fmt.Sprintf("%s runs %s, which is not a file", c.what, c.program))
		case fi.Mode().Perm()&0o111 == 0:
			notes = append(notes, fmt.Sprintf("%s runs %s, which is not executable (chmod +x)", c.what, c.program))
		}
	}
	return notes
}

// warnUnknownTargets names the targets that queued deliveries are for but
// the config no longer has (renamed or removed since they were queued):
// each goes dead at its next attempt.
func (m *Main) warnUnknownTargets(ctx context.Context) {
	log := m.component("queue")
	queued, err := m.Queue.QueuedByTarget(ctx)
	if err != nil {
		log.Warn().Err(err).Msg("could not count queued deliveries by target")
		return
	}
	for _, name := range slices.Sorted(maps.Keys(queued)) {
		if slices.ContainsFunc(m.Config.Targets, func(t config.Target) bool { return t.Name == name }) {
			continue
		}
		log.Warn().Str("target", name).Int64("deliveries", queued[name]).
			Msg("queued deliveries are for a target the config no longer names: each goes dead at its next attempt; put the target back and run hookbox replay --dead to deliver them")
	}
}
