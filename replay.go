package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"hookbox/internal/cli"
	"hookbox/replay"
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
	req := replay.Request{Dead: *dead, Since: *since, Until: *until, Target: *target}
	switch fs.NArg() {
	case 0:
	case 1:
		id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
		if err != nil || id <= 0 {
			return cli.Usagef("replay: %q is not an event number", fs.Arg(0))
		}
		req.Event = id
	default:
		if strings.HasPrefix(fs.Arg(1), "-") {
			return cli.Usagef("replay: unexpected argument %q (flags go before arguments)", fs.Arg(1))
		}
		return cli.Usagef("replay: give at most one event number")
	}
	now := time.Now()
	// Checked before the store is opened: a mistake is told as such even
	// where there is no store.
	if _, err := replay.Parse(req, nil, now); err != nil {
		return replayUsage(err)
	}
	cfg, db, err := c.OpenStore(*path)
	if err != nil {
		return err
	}
	defer db.Close()
	sel, err := replay.Parse(req, cfg.Targets, now)
	if err != nil {
		return replayUsage(err)
	}
	r, err := replay.Run(ctx, db, sel, cfg.Targets, now)
	if err != nil {
		return err // "event N: event not found", as hookbox event says
	}
	if r.Queued > 0 || r.Backfilled.Queued > 0 {
		wakeReplicas(ctx, db)
	}
	for _, l := range r.Lines() {
		fmt.Fprintln(c.Stdout, l)
	}
	return notePaused(ctx, c.Env, db, sel.Target)
}

// replayUsage is a replay.Parse error in the command's words: a field is
// a flag, the event its argument.
func replayUsage(err error) error {
	fe, ok := err.(*replay.FieldError)
	if !ok {
		return err
	}
	switch fe.Field {
	case "event":
		if fe.Msg == replay.MsgNoSelection {
			return cli.Usagef("replay: give an event number, --dead, or --since")
		}
		return cli.Usagef("replay: %s", fe.Msg)
	case "until":
		if fe.Msg == replay.MsgUntilBeforeSince {
			return cli.Usagef("replay: --until must be later than --since")
		}
	case "target":
		return cli.Usagef("replay: --target %s", fe.Msg)
	}
	return cli.Usagef("replay: --%s: %s", fe.Field, fe.Msg)
}

// wakeReplicas tells the serve replicas of a PostgreSQL store that work is
// queued, so that they run it now rather than at their next look (a
// SQLite serve looks every delivery.poll). A failure only delays it.
func wakeReplicas(ctx context.Context, db cli.Store) {
	if w, ok := db.(interface{ WakeNow(context.Context) error }); ok {
		_ = w.WakeNow(ctx)
	}
}
