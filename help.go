package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"hookbox/internal/cli"
)

// command is one `hookbox NAME`: it parses its own flags from args.
type command interface {
	Run(ctx context.Context, args []string) error
}

// entry is a line of the command list.
type entry struct {
	name, summary string
	new           func(cli.Env) command
	hidden        bool // a helper of another command, not for users
}

// commands lists every subcommand, in the order `hookbox help` shows them.
func commands() []entry {
	return []entry{
		{name: "serve", summary: serveSummary, new: func(e cli.Env) command { return &ServeCommand{e} }},
		{name: "check", summary: checkSummary, new: func(e cli.Env) command { return &CheckCommand{e} }},
		{name: "events", summary: eventsSummary, new: func(e cli.Env) command { return &EventsCommand{e} }},
		{name: "event", summary: eventSummary, new: func(e cli.Env) command { return &EventCommand{e} }},
		{name: "dead", summary: deadSummary, new: func(e cli.Env) command { return &DeadCommand{e} }},
		{name: "replay", summary: replaySummary, new: func(e cli.Env) command { return &ReplayCommand{e} }},
		{name: "pause", summary: pauseSummary, new: func(e cli.Env) command { return &PauseCommand{e} }},
		{name: "resume", summary: resumeSummary, new: func(e cli.Env) command { return &ResumeCommand{e} }},
		{name: "lanes", summary: lanesSummary, new: func(e cli.Env) command { return &LanesCommand{e} }},
		{name: "backup", summary: backupSummary, new: func(e cli.Env) command { return &BackupCommand{Env: e} }},
		{name: "fire", summary: fireSummary, new: func(e cli.Env) command { return &FireCommand{e} }},
		{name: "presets", summary: presetsSummary, new: func(e cli.Env) command { return &PresetsCommand{e} }},
		{name: "bench", summary: benchSummary, new: func(e cli.Env) command { return &BenchCommand{e} }},
		{name: "bench-server", summary: benchServerSummary, new: func(e cli.Env) command { return &BenchServerCommand{e} }, hidden: true},
		{name: "version", summary: versionSummary, new: func(e cli.Env) command { return &VersionCommand{e} }},
		{name: "help", summary: "show the commands, or one command's flags", new: func(e cli.Env) command { return &helpCommand{e} }},
	}
}

// Execute runs the command args name: hookbox's whole command line.
func Execute(ctx context.Context, env cli.Env, args []string) error {
	if len(args) == 0 {
		usage(env.Stderr)
		return cli.Usagef("no command given")
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(env.Stdout)
		return nil
	case "-version", "--version":
		return (&VersionCommand{env}).Run(ctx, nil)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.new(env).Run(ctx, args[1:])
		}
	}
	usage(env.Stderr)
	return cli.Usagef("unknown command %q", args[0])
}

// usage writes the list of commands.
func usage(w io.Writer) {
	fmt.Fprint(w, "hookbox: a durable inbox for webhooks\n\nUsage: hookbox COMMAND [flags] [arguments]\n\nCommands:\n")
	for _, c := range commands() {
		if !c.hidden {
			fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprint(w, `
"hookbox COMMAND --help" shows a command's flags. Flags come before
arguments. Without --config, $HOOKBOX_CONFIG is used; without either, the
local-sink defaults (127.0.0.1:8080, ./hookbox.db).
`)
}

// helpCommand is `hookbox help [COMMAND]`.
type helpCommand struct{ cli.Env }

func (c *helpCommand) Run(ctx context.Context, args []string) error {
	fs := cli.NewFlagSet(c.Env, "help", "[COMMAND]", "show the commands, or one command's flags")
	if err := fs.Parse(args, -1); err != nil {
		return err
	}
	switch fs.NArg() {
	case 0:
		usage(c.Stdout)
		return nil
	case 1:
		name := fs.Arg(0)
		for _, e := range commands() {
			if e.name == name && name != "help" {
				return e.new(c.Env).Run(ctx, []string{"--help"})
			}
		}
		return cli.Usagef("help: unknown command %q (commands: %s)", name, strings.Join(names(), ", "))
	}
	return cli.Usagef("help: give at most one command")
}

func names() []string {
	var out []string
	for _, c := range commands() {
		if !c.hidden {
			out = append(out, c.name)
		}
	}
	return out
}
