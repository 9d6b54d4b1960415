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

const presetsSummary = "list every provider preset: signature header, event id, type, tolerance, docs"

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
}

func (c *PresetsCommand) Run(ctx context.Context, args []string) error {
	fs := cli.NewFlagSet(c.Env, "presets", "", presetsSummary)
	asJSON := fs.Bool("json", false, "one JSON object a line")
	fs.Explain(`A source's verify key names one; event_id and event_type override its defaults.`)
	if err := fs.Parse(args, 0); err != nil {
		return err
	}
	var enc *json.Encoder
	var tw *tabwriter.Writer
	if *asJSON {
		enc = json.NewEncoder(c.Stdout)
	} else {
		tw = tabwriter.NewWriter(c.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PRESET\tSIGNATURE\tEVENT ID\tTYPE\tTOLERANCE\tDOCS")
	}
	for _, p := range provider.All() {
		l := presetLine{Name: p.Name, Signature: strings.ReplaceAll(p.Signature, "`", ""), EventID: p.EventID, EventType: p.EventType, Docs: p.Docs}

		l.Tolerance = p.ToleranceText()
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", l.Name, l.Signature, id, typ, cli.OrDash(l.Tolerance), cli.OrDash(l.Docs))
	}
	if tw != nil {
		return tw.Flush()
	}
	return nil
}
