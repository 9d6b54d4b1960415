package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"hookbox/dedupe"
	"hookbox/internal/cli"
	"hookbox/queue"
	"hookbox/view"
)

const eventsSummary = "list stored events, newest first"

// EventsCommand is `hookbox events`.
type EventsCommand struct{ cli.Env }

// eventsPage is how many events `hookbox events` reads at a time.
const eventsPage = 1000

func (c *EventsCommand) Run(ctx context.Context, args []string) error {
	fs := cli.NewFlagSet(c.Env, "events", "", eventsSummary)
	path := fs.String("config", "", "config `FILE` (default $HOOKBOX_CONFIG)")
	source := fs.String("source", "", "only this `SOURCE`")
	status := fs.String("status", "", "only events with a delivery in this `STATUS` (pending, running, retrying, paused, done, dead, skipped)")
	key := fs.String("key", "", "only events of this order `KEY` (the resource its source's order_key names)")
	limit := fs.Int("limit", 50, "at most `N` events (0: all)")
	asJSON := fs.Bool("json", false, "one JSON object a line")
	if err := fs.Parse(args, 0); err != nil {
		return err
	}
	switch *status {
	case "", queue.Pending, queue.Running, queue.Retrying, queue.Paused, queue.Done, queue.Dead, queue.Skipped:
	default:
		return cli.Usagef("events: --status %q: want pending, running, retrying, paused, done, dead or skipped", *status)
	}
	if *limit < 0 {
		return cli.Usagef("events: --limit must be 0 or more")
	}
	_, db, err := c.OpenStore(*path)
	if err != nil {
		return err
	}
	defer db.Close()
	// A page at a time, newest first: --limit 0 on a store of millions
	// streams rather than loading every event.
	filter := dedupe.Filter{Source: *source, Status: *status, Key: *key}
	total := 0
	var tw *tabwriter.Writer
	if !*asJSON {
		tw = tabwriter.NewWriter(c.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tRECEIVED\tSOURCE\tEVENT ID\tTYPE\tREDELIVERIES\tDELIVERIES")
	}
	more := false
	for *limit == 0 || total < *limit {
		filter.Limit = eventsPage
		if *limit > 0 {
			filter.Limit = min(filter.Limit, *limit-total)
		}
		list, err := db.ListEvents(ctx, filter)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			break
		}
		if err := c.write(ctx, db, list, *asJSON, tw); err != nil {
			return err
		}
		total += len(list)
		filter.Before = list[len(list)-1].ID
		// The table's columns are aligned over everything written before a
		// flush: every 10,000 rows keeps a long listing out of memory.
		if tw != nil && total%(10*eventsPage) == 0 {
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		if len(list) < filter.Limit {
			break
		}
		if *limit > 0 && total == *limit {
			filter.Limit = 1
			next, err := db.ListEvents(ctx, filter)
			if err != nil {
				return err
			}
			more = len(next) > 0
		}
	}
	if tw != nil {
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	switch {
	case more:
		fmt.Fprintf(c.Stderr, "the newest %s shown; more match: --limit N shows more, --limit 0 all\n", cli.Count(total, "event"))
	case total == 0 && (*source != "" || *status != "" || *key != ""):
		fmt.Fprintln(c.Stderr, "no events match")
	case total == 0:
		fmt.Fprintln(c.Stderr, "no events stored yet")
	}
	return nil
}

// write writes one page: JSON lines, or rows of tw.
func (c *EventsCommand) write(ctx context.Context, db cli.Store, list []dedupe.Stored, asJSON bool, tw *tabwriter.Writer) error {
	ids := make([]int64, len(list))
	for i, e := range list {
		ids[i] = e.ID
	}
	deliveries, err := db.Deliveries(ctx, ids)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(c.Stdout)
		for _, e := range list {
			if err := enc.Encode(view.NewEvent(e, deliveries[e.ID])); err != nil {
				return err
			}
		}
		return nil
	}
	for _, e := range list {
		var ds []string
		for _, d := range deliveries[e.ID] {
			ds = append(ds, fmt.Sprintf("%s:%s(%d)", d.Target, d.Status, d.Attempts))
		}
		dl := cli.OrDash(strings.Join(ds, " "))
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\n", e.ID, view.Time(e.ReceivedAt), cli.Printable(e.Source), cli.Printable(e.EventID), cli.Printable(cli.OrDash(e.Type)), e.Redeliveries, dl)
	}
	return nil
}
