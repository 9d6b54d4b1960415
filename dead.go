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

const deadSummary = "list the dead letters: deliveries that used up their attempts or failed permanently, with their alerts"

// DeadCommand is `hookbox dead`.
type DeadCommand struct{ cli.Env }

func (c *DeadCommand) Run(ctx context.Context, args []string) error {
	fs := cli.NewFlagSet(c.Env, "dead", "", deadSummary)
	path := fs.String("config", "", "config `FILE` (default $HOOKBOX_CONFIG)")
	asJSON := fs.Bool("json", false, "one JSON object a line")
	all := fs.Bool("all", false, "include dead letters already revived by a redelivery or replay")
	limit := fs.Int("limit", 0, "at most `N` (0: all)")
	fs.Explain(`The ALERT column: sent; pending (not tried yet); retrying: ERROR (a send
failed, it is tried again); gave up: ERROR (every try failed); - (no [alert]).
hookbox replay --dead runs them again.`)
	if err := fs.Parse(args, 0); err != nil {
		return err
	}
	if *limit < 0 {
		return cli.Usagef("dead: --limit must be 0 or more")
	}
	_, db, err := c.OpenStore(*path)
	if err != nil {
		return err
	}
	defer db.Close()
	list, err := db.DeadLetters(ctx, *all, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(c.Stdout)
		for _, d := range list {
			if err := enc.Encode(view.NewDead(d)); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(c.Stdout, 0, 4, 2, ' ', 0)
	header := "EVENT\tDEAD AT\tSOURCE\tEVENT ID\tTARGET\tATTEMPTS\tERROR\tALERT"
	if *all {
		header += "\tREVIVED" // when a redelivery or replay put it back
	}
	fmt.Fprintln(tw, header)
	p := cli.Printable
	for _, d := range list {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s", d.Event, view.Time(d.DeadAt), p(d.Source), p(d.EventID), d.Target, d.Attempts, p(d.Error), p(alertColumn(d)))
		if *all {
			fmt.Fprintf(tw, "\t%s", cli.OrDash(view.Time(d.RevivedAt)))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(c.Stderr, "no dead letters")
	}
	return nil
}

// alertColumn is the ALERT column: the alert's state, with the last
// failed send's error while it is retried or once it was given up.
func alertColumn(d queue.DeadLetter) string {
	switch s := view.AlertState(d); s {
	case view.AlertRetrying, view.AlertGaveUp:
		return s + ": " + d.AlertErr
	case view.AlertNone:
		return "-"
	default:
		return s
	}
}
