package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"hookbox/config"
	"hookbox/internal/cli"
)

const (
	pauseSummary  = "hold a target's deliveries: they wait as paused, spending no attempts, until resume"
	resumeSummary = "let a paused target's deliveries go"
)

// PauseCommand is `hookbox pause`.
type PauseCommand struct{ cli.Env }

func (c *PauseCommand) Run(ctx context.Context, args []string) error {
	fs := cli.NewFlagSet(c.Env, "pause", "[TARGET]", pauseSummary)
	path := fs.String("config", "", "config `FILE` (default $HOOKBOX_CONFIG)")
	fs.Explain(`TARGET is a [[target]] name of the config. Its queued deliveries wait as
paused: no attempt is spent and no retry clock runs, so a target down for a
planned day does not go dead. New events for it queue paused. Attempts
running when the pause lands finish; a failure among them waits paused.
The pause is kept in the store: it holds across restarts of serve, which
sees it within a second. Without TARGET, lists the paused targets.
  hookbox pause billing       before the maintenance
  hookbox resume billing      after it`)
	if err := fs.Parse(args, -1); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return cli.Usagef("pause: unexpected argument %q (give one target; flags go before arguments)", fs.Arg(1))
	}
	cfg, db, err := c.OpenStore(*path)
	if err != nil {
		return err
	}
	defer db.Close()
	if fs.NArg() == 0 {
		list, err := db.Paused(ctx)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			fmt.Fprintln(c.Stdout, "no target is paused")
			return nil
		}
		tw := tabwriter.NewWriter(c.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TARGET\tPAUSED SINCE")
		for _, p := range list {
			fmt.Fprintf(tw, "%s\t%s\n", cli.Printable(p.Name), p.Since.UTC().Format(time.RFC3339))
		}
		return tw.Flush()
	}
	target := fs.Arg(0)
	if err := knownTarget(cfg, "pause", target); err != nil {
		return err
	}
	r, err := db.Pause(ctx, target, time.Now())
	if err != nil {
		return err
	}
	since := r.Since.UTC().Format(time.RFC3339)
	if r.Already {
		fmt.Fprintf(c.Stdout, "%s was already paused (since %s): %s held\n", target, since, cli.Count(r.Deliveries, "delivery"))
	} else {
		fmt.Fprintf(c.Stdout, "paused %s: %s held; a running hookbox serve starts none of them (nor new ones) until hookbox resume %s\n",
			target, cli.Count(r.Deliveries, "delivery"), target)
	}
	if r.Running > 0 {
		if r.Running == 1 {
			fmt.Fprintln(c.Stdout, "1 attempt running now finishes; if it fails, it waits paused for its retry")
		} else {
			fmt.Fprintf(c.Stdout, "%s running now finish; a failure among them waits paused for its retry\n", cli.Count(r.Running, "attempt"))
		}
	}
	return nil
}

// ResumeCommand is `hookbox resume`.
type ResumeCommand struct{ cli.Env }

func (c *ResumeCommand) Run(ctx context.Context, args []string) error {
	fs := cli.NewFlagSet(c.Env, "resume", "TARGET", resumeSummary)
	path := fs.String("config", "", "config `FILE` (default $HOOKBOX_CONFIG)")
	fs.Explain(`Releases the deliveries hookbox pause TARGET held: each is due at once (a
retry's wait is not kept: the target is back), in the order they were due,
and a running serve starts them within a second, at the target's rate and
concurrency if it has them.`)
	if err := fs.Parse(args, 1); err != nil {
		return err
	}
	cfg, db, err := c.OpenStore(*path)
	if err != nil {
		return err
	}
	defer db.Close()
	target := fs.Arg(0)
	if err := knownTarget(cfg, "resume", target); err != nil {
		return err
	}
	now := time.Now()
	r, err := db.Resume(ctx, target, now)
	if err != nil {
		return err
	}
	if r.Already {
		fmt.Fprintf(c.Stdout, "%s is not paused\n", target)
		return nil
	}
	if r.Deliveries > 0 {
		wakeReplicas(ctx, db)
	}
	fmt.Fprintf(c.Stdout, "resumed %s (paused since %s, %s): %s released; a running hookbox serve starts them within a second\n",
		target, r.Since.UTC().Format(time.RFC3339), config.Duration(now.Sub(r.Since).Round(time.Second)), cli.Count(r.Deliveries, "delivery"))
	return nil
}

// knownTarget fails with a usage error (exit 2, as replay --target does),
// naming the config's targets, unless target is one of them: a pause of a
// mistyped name would hold nothing and say so nowhere.
func knownTarget(cfg config.Config, command, target string) error {
	if slices.ContainsFunc(cfg.Targets, func(t config.Target) bool { return t.Name == target }) {
		return nil
	}
	if len(cfg.Targets) == 0 {
		return cli.Usagef("%s: no target %q: the config has no [[target]] (pass serve's config with --config)", command, cli.Printable(target))
	}
	return cli.Usagef("%s: no target %q in the config (targets: %s)", command, cli.Printable(target), strings.Join(cfg.TargetNames(), ", "))
}

// notePaused tells, after a replay, which paused targets hold what it
// queued (of target, or of any when ""): those wait until resume.
func notePaused(ctx context.Context, env cli.Env, db cli.Store, target string) error {
	list, err := db.Paused(ctx)
	if err != nil {
		return err
	}
	for _, p := range list {
		if target == "" || p.Name == target {
			fmt.Fprintf(env.Stdout, "note: %s is paused: its deliveries wait until hookbox resume %s\n", cli.Printable(p.Name), cli.Printable(p.Name))
		}
	}
	return nil
}
