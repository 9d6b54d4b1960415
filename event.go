package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"hookbox/dedupe"
	"hookbox/internal/cli"
	"hookbox/view"
)

const eventSummary = "show one event: headers, deliveries and every attempt, or its raw body"

// EventCommand is `hookbox event`.
type EventCommand struct{ cli.Env }

func (c *EventCommand) Run(ctx context.Context, args []string) error {
	fs := cli.NewFlagSet(c.Env, "event", "ID", eventSummary)
	path := fs.String("config", "", "config `FILE` (default $HOOKBOX_CONFIG)")
	body := fs.Bool("body", false, "write the raw body bytes exactly, nothing else")
	asJSON := fs.Bool("json", false, "one JSON object")
	fs.Explain("ID is the event's number: the ID column of hookbox events.")
	if err := fs.Parse(args, -1); err != nil {
		return err
	}
	switch fs.NArg() {
	case 0:
		return cli.Usagef("event: missing the event's ID (the ID column of hookbox events)")
	case 1:
	default:
		return cli.Usagef("event: unexpected argument %q (flags go before arguments)", fs.Arg(1))
	}
	id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
	if err != nil || id <= 0 {
		return cli.Usagef("event: %q is not an event number (see the ID column of hookbox events)", fs.Arg(0))
	}
	_, db, err := c.OpenStore(*path)
	if err != nil {
		return err
	}
	defer db.Close()
	d, err := view.LoadDetail(ctx, db, id)
	if err != nil {
		return err
	}
	if *body {
		if d.Swept {
			return fmt.Errorf("event %d: the body was removed by retention", id)
		}
		_, err := c.Stdout.Write(d.Body)
		return err
	}
	if *asJSON {
		return json.NewEncoder(c.Stdout).Encode(d)
	}
	c.print(d)
	return nil
}

// print writes d for a person.
func (c *EventCommand) print(e view.Detail) {
	p := cli.Printable
	w := c.Stdout
	fmt.Fprintf(w, "event %d\n  source:       %s\n  event id:     %s\n  type:         %s\n  received:     %s\n  body:         %d bytes (%s)\n",
		e.ID, p(e.Source), p(e.EventID), p(cli.OrDash(e.Type)), e.ReceivedAt, e.BodySize, p(cli.OrDash(e.ContentType)))
	fmt.Fprintf(w, "  redeliveries: %d", e.Redeliveries)
	if e.LastSeenAt != "" {
		fmt.Fprintf(w, " (last %s)", e.LastSeenAt)
	}
	if e.Conflicts > 0 {
		fmt.Fprintf(w, ", %d with a different body", e.Conflicts)
	}
	fmt.Fprintln(w)
	if e.OrderKey != "" {
		fmt.Fprintf(w, "  order key:    %s\n", p(e.OrderKey))
		switch {
		case e.OrderVersion == "":
			fmt.Fprintln(w, "  version:      - (none found: ordered by receipt)")
		case e.VersionUnreadable:
			fmt.Fprintf(w, "  version:      %s (neither a number nor an RFC 3339 time: ordered by receipt)\n", p(e.OrderVersion))
		default:
			fmt.Fprintf(w, "  version:      %s\n", p(e.OrderVersion))
		}
	}
	if st := e.SecretText(); st != "" {
		fmt.Fprintf(w, "  verified by:  %s\n", st)
	}
	if e.Swept {
		fmt.Fprintln(w, "  payload and headers removed by retention")
	}
	if len(e.Headers) > 0 {
		fmt.Fprintln(w, "headers:")
		for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
			for _, v := range e.Headers[k] {
				fmt.Fprintf(w, "  %s: %s\n", k, p(v))
			}
		}
	}
	if len(e.ConflictCopies) > 0 {
		fmt.Fprintf(w, "conflicts: copies with another body, the latest %d kept (the body stored is the first's):\n", dedupe.KeptConflicts)
		for _, c := range e.ConflictCopies {
			fmt.Fprintf(w, "  %s: %d bytes (%s)\n", c.ReceivedAt, c.BodySize, p(cli.OrDash(c.ContentType)))
		}
	}
	if len(e.Deliveries) == 0 {
		fmt.Fprintln(w, "deliveries: none (no target matches this source and type)")
	} else {
		fmt.Fprintln(w, "deliveries:")
	}
	for _, d := range e.Deliveries {
		fmt.Fprintf(w, "  %s: %s after %d attempt(s)", d.Target, d.Status, d.Attempts)
		if d.DeadReason != "" {
			fmt.Fprintf(w, " (%s)", p(d.DeadReason))
		}
		if d.Reason != "" {
			fmt.Fprintf(w, " (%s)", p(d.Reason))
		}
		switch {
		case d.LanePosition == 1:
			fmt.Fprintf(w, ", head of lane %s", p(d.Lane))
		case d.LanePosition > 1:
			fmt.Fprintf(w, ", waiting in lane %s at place %d (behind %d)", p(d.Lane), d.LanePosition, d.LanePosition-1)
		}
		if d.NextAt != "" {
			fmt.Fprintf(w, ", next at %s", d.NextAt)
		}
		if d.DoneAt != "" {
			fmt.Fprintf(w, ", at %s", d.DoneAt)
		}
		fmt.Fprintln(w)
		if d.LastError != "" {
			fmt.Fprintf(w, "    last error: %s\n", p(d.LastError))
		}
		for _, a := range d.History {
			fmt.Fprintf(w, "    #%d %s %s %dms", a.Attempt, a.StartedAt, a.Outcome, a.DurationMS)
			if a.HTTPStatus != 0 {
				fmt.Fprintf(w, " http %d", a.HTTPStatus)
			}
			if a.ExitCode != nil {
				fmt.Fprintf(w, " exit %d", *a.ExitCode)
			}
			if a.Error != "" {
				fmt.Fprintf(w, " error: %s", p(a.Error))
			}
			fmt.Fprintln(w)
			if a.Output != "" {
				for _, l := range strings.Split(strings.TrimRight(a.Output, "\n"), "\n") {
					fmt.Fprintf(w, "       | %s\n", p(l))
				}
			}
		}
	}
}
