package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"hookbox/config"
	"hookbox/internal/cli"
	"hookbox/queue"
)

const replaySummary = "queue deliveries again: of one event, every dead one, or a period's"

// ReplayCommand is `hookbox replay`.
type ReplayCommand struct{ cli.Env }

func (c *ReplayCommand) Run(ctx context.Context, args []string) error {
	fs := cli.NewFlagSet(c.Env, "replay", "[ID]", replaySummary)
	path := fs.String("config", "", "config `FILE` (default $HOOKBOX_CONFIG)")
	dead := fs.Bool("dead", false, "only dead deliveries (every one, or with ID that event's)")
	since := fs.String("since", "", "events received at or after this `TIME` (RFC3339, or a duration ago like 2h or 7d)")
	until := fs.String("until", "", "with --since: received before this `TIME`")
	target := fs.String("target", "", "only deliveries to this `TARGET`")
	fs.Explain(`Give an event number (the ID column of hookbox events), --dead, or --since:
  hookbox replay 42             every delivery of event 42, done ones included
  hookbox replay --dead 42      only event 42's dead deliveries
  hookbox replay --dead         every dead delivery
  hookbox replay --since 24h --target billing
A running serve picks them up within a second.`)
	if err := fs.Parse(args, -1); err != nil {
		return err
	}
	var sel queue.ReplaySelector
	sel.DeadOnly, sel.Target = *dead, *target
	switch fs.NArg() {
	case 0:
	case 1:
		id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
		if err != nil || id <= 0 {
			return cli.Usagef("replay: %q is not an event number", fs.Arg(0))
		}
		sel.Event = id
	default:
		if strings.HasPrefix(fs.Arg(1), "-") {
			return cli.Usagef("replay: unexpected argument %q (flags go before arguments)", fs.Arg(1))
		}
		return cli.Usagef("replay: give at most one event number")
	}
	now := time.Now()
	var err error
	if sel.Since, err = parseWhen(*since, now); err != nil {
		return cli.Usagef("replay: --since: %v", err)
	}
	if sel.Until, err = parseWhen(*until, now); err != nil {
		return cli.Usagef("replay: --until: %v", err)
	}
	if !sel.Since.IsZero() && !sel.Until.IsZero() && !sel.Until.After(sel.Since) {
		return cli.Usagef("replay: --until must be later than --since")
	}
	if sel.Event == 0 && !sel.DeadOnly && sel.Since.IsZero() {
		return cli.Usagef("replay: give an event number, --dead, or --since")
	}
	cfg, db, err := c.OpenStore(*path)
	if err != nil {
		return err
	}
	defer db.Close()
	// A config with targets (serve's) names them all; one that only points
	// at the store cannot tell a typo.
	if sel.Target != "" && len(cfg.Targets) > 0 && !slices.ContainsFunc(cfg.Targets, func(t config.Target) bool { return t.Name == sel.Target }) {
		return cli.Usagef("replay: --target %q: no such target in the config (targets: %s)", sel.Target, strings.Join(cfg.TargetNames(), ", "))
	}
	if sel.Event > 0 {
		if _, err := db.GetEvent(ctx, sel.Event); err != nil {
			return err // "event N: event not found", as hookbox event says
		}
	}
	r, err := db.Replay(ctx, sel, now)
	if err != nil {
		return err
	}
	wakeReplicas(ctx, db)
	out := c.Stdout
	fmt.Fprintf(out, "%s queued again; hookbox serve runs them within a second (at its next start if it is not running)\n", cli.Count(r.Queued, "delivery"))
	// A target added or renamed since its events came has no delivery of
	// them to replay: it gets one.
	if i := slices.IndexFunc(cfg.Targets, func(t config.Target) bool { return t.Name == sel.Target }); i >= 0 && !sel.DeadOnly {
		t := cfg.Targets[i]
		b, err := db.Backfill(ctx, queue.BackfillSelector{Target: t.Name, Event: sel.Event, Since: sel.Since, Until: sel.Until, Matches: t.Matches}, now)
		if err != nil {
			return err
		}
		if b.Queued > 0 {
			wakeReplicas(ctx, db)
			fmt.Fprintf(out, "%s added for events that had none for %s (received before the target was added or renamed)\n", cli.Count(b.Queued, "delivery"), t.Name)
		}
		if b.Swept > 0 {
			fmt.Fprintf(out, "%s for %s not added: their event's payload was removed by retention\n", cli.Count(b.Swept, "delivery"), t.Name)
		}
	}
	if r.Swept > 0 {
		fmt.Fprintf(out, "%s left out: their event's payload was removed by retention (retention.payloads), so they cannot run again\n", cli.Count(r.Swept, "delivery"))
	}
	if r.Running > 0 {
		fmt.Fprintf(out, "%s left out: running (or about to run) now; once they finish, replay again to run them once more\n", cli.Count(r.Running, "delivery"))
	}
	if r.Changed > 0 {
		fmt.Fprintf(out, "%s left out: they changed while the replay ran (claimed, revived and done, or swept)\n", cli.Count(r.Changed, "delivery"))
	}
	return nil
}

// parseWhen parses an RFC3339 time or a duration before now ("2h", "7d").
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := config.ParseDuration(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an RFC3339 time nor a duration like 2h or 7d", s)
	}
	return now.Add(-d), nil
}

// wakeReplicas tells the serve replicas of a PostgreSQL store that work is
// queued, so that they run it now rather than at their next look (a
// SQLite serve looks every delivery.poll). A failure only delays it.
func wakeReplicas(ctx context.Context, db cli.Store) {
	if w, ok := db.(interface{ WakeNow(context.Context) error }); ok {
		_ = w.WakeNow(ctx)
	}
}
