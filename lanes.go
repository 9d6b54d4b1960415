package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"hookbox/internal/cli"
	"hookbox/queue"
	"hookbox/view"
)

const lanesSummary = "list the ordering lanes of ordered targets: key, head event, queued count, last delivered version, blocked since"

// LanesCommand is `hookbox lanes`.
type LanesCommand struct{ cli.Env }

func (c *LanesCommand) Run(ctx context.Context, args []string) error {
	fs := cli.NewFlagSet(c.Env, "lanes", "", lanesSummary)
	path := fs.String("config", "", "config `FILE` (default $HOOKBOX_CONFIG)")
	target := fs.String("target", "", "only this `TARGET`'s lanes")
	blocked := fs.Bool("blocked", false, "only blocked lanes: those whose head is retrying, or whose target is paused")
	limit := fs.Int("limit", 0, "at most `N` lanes (0: all)")
	asJSON := fs.Bool("json", false, "one JSON object a line")
	fs.Explain(`A lane is (target, order key): the deliveries of one target about one
resource, run one at a time at a target with order = "fifo", "latest" or
"coalesce". HEAD is the event whose delivery runs (or runs next), QUEUED
how many wait behind it, LAST the version delivered last (and its event),
BLOCKED since when the head has been failing, or its target paused.`)
	if err := fs.Parse(args, 0); err != nil {
		return err
	}
	if *limit < 0 {
		return cli.Usagef("lanes: --limit must be 0 or more")
	}
	cfg, db, err := c.OpenStore(*path)
	if err != nil {
		return err
	}
	defer db.Close()
	f := queue.LaneFilter{Target: *target, Blocked: *blocked, Limit: *limit}
	n := 0
	if *asJSON {
		enc := json.NewEncoder(c.Stdout)
		err = view.ListLanes(ctx, db, f, func(l view.Lane) error { n++; return enc.Encode(l) })
	} else {
		tw := tabwriter.NewWriter(c.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TARGET\tKEY\tHEAD\tQUEUED\tLAST\tBLOCKED SINCE")
		p := cli.Printable
		err = view.ListLanes(ctx, db, f, func(l view.Lane) error {
			n++
			head := "-"
			if l.HeadEvent != 0 {
				head = fmt.Sprintf("%d (%s)", l.HeadEvent, l.HeadStatus)
			}
			last := "-"
			if l.LastEvent != 0 {
				last = fmt.Sprintf("%s (event %d)", p(cli.OrDash(l.LastVersion)), l.LastEvent)
			}
			_, err := fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", l.Target, p(l.Key), head, l.Queued, last, cli.OrDash(l.BlockedSince))
			return err
		})
		if ferr := tw.Flush(); err == nil {
			err = ferr
		}
	}
	if err != nil {
		return err
	}
	if n == 0 {
		if *target != "" {
			// A lane of a target the config no longer has is still listed;
			// none, for a name the config lacks, is most likely a typo.
			if err := knownTarget(cfg, "lanes", *target); err != nil {
				return err
			}
		}
		if *blocked {
			fmt.Fprintln(c.Stderr, "no blocked lanes")
		} else {
			fmt.Fprintln(c.Stderr, "no lanes (a target with order = \"fifo\", \"latest\" or \"coalesce\" makes them)")
		}
	}
	return nil
}
