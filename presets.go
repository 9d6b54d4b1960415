package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"hookbox/internal/cli"
	"hookbox/provider"
)

const presetsSummary = "list every provider preset: signature header, event id, type, tolerance, order key and version, refetch, docs"

// PresetsCommand is `hookbox presets`.
type PresetsCommand struct{ cli.Env }

// presetLine is the --json form of a preset.
type presetLine struct {
	Name      string `json:"name"`
	Signature string `json:"signature"`
	EventID   string `json:"event_id,omitempty"`
	EventType string `json:"event_type,omitempty"`
	Tolerance string `json:"tolerance,omitempty"`
	Docs      string `json:"docs,omitempty"`
	// OrderKey and OrderVersion are the defaults of a source's order_key
	// and order_version; OrderDocs documents them.
	OrderKey     string `json:"order_key,omitempty"`
	OrderVersion string `json:"order_version,omitempty"`
	OrderDocs    string `json:"order_docs,omitempty"`
	// Refetch is the preset's fetch API, for a target's refetch key.
	Refetch *refetchLine `json:"refetch,omitempty"`
}

// refetchLine is a preset's fetch API in presets --json.
type refetchLine struct {
	Request string `json:"request"`
	Base    string `json:"base,omitempty"` // "" where the event names it (Shopify's shop)
	Rate    string `json:"rate"`
	Note    string `json:"rate_note,omitempty"`
	Docs    string `json:"docs"`
}

func (c *PresetsCommand) Run(ctx context.Context, args []string) error {
	fs := cli.NewFlagSet(c.Env, "presets", "", presetsSummary)
	asJSON := fs.Bool("json", false, "one JSON object a line")
	fs.Explain(`A source's verify key names one; event_id and event_type override its defaults. A target's
refetch names one with a fetch API (REFETCH: its rate, the default of refetch_rate).`)
	if err := fs.Parse(args, 0); err != nil {
		return err
	}
	var enc *json.Encoder
	var tw *tabwriter.Writer
	if *asJSON {
		enc = json.NewEncoder(c.Stdout)
	} else {
		tw = tabwriter.NewWriter(c.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PRESET\tSIGNATURE\tEVENT ID\tTYPE\tTOLERANCE\tORDER KEY\tORDER VERSION\tREFETCH\tDOCS")
	}
	for _, p := range provider.All() {
		l := presetLine{Name: p.Name, Signature: strings.ReplaceAll(p.Signature, "`", ""), EventID: p.EventID, EventType: p.EventType, Docs: p.Docs}

		l.Tolerance = p.ToleranceText()
		l.OrderKey, l.OrderVersion, l.OrderDocs = p.OrderKey, p.OrderVersion, p.OrderDocs
		if r := p.Refetch; r != nil {
			l.Refetch = &refetchLine{Request: strings.ReplaceAll(r.What, "`", ""), Base: r.Base, Rate: r.Rate,
				Note: strings.ReplaceAll(r.RateNote, "`", ""), Docs: r.Docs}
		}
		if enc != nil {
			if err := enc.Encode(l); err != nil {
				return err
			}
			continue
		}
		id, typ := l.EventID, l.EventType
		if id == "" {
			id = "(set event_id)"
		}
		if typ == "" {
			typ = "(optional)"
		}
		fetch := "-"
		if l.Refetch != nil {
			fetch = l.Refetch.Rate
			if l.Refetch.Base != "" {
				fetch = l.Refetch.Base + " " + fetch
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Name, l.Signature, id, typ, cli.OrDash(l.Tolerance),
			cli.OrDash(l.OrderKey), cli.OrDash(l.OrderVersion), fetch, cli.OrDash(l.Docs))
	}
	if tw != nil {
		return tw.Flush()
	}
	return nil
}
