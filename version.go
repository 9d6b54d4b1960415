package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"

	"hookbox/internal/cli"
)

// Set at build time with -ldflags "-X main.version=… -X main.commit=…".
var (
	version = "dev"
	commit  = ""
)

const versionSummary = "print the version, the commit and the Go version (also: hookbox --version)"

// VersionCommand is `hookbox version`.
type VersionCommand struct{ cli.Env }

func (c *VersionCommand) Run(ctx context.Context, args []string) error {
	fs := cli.NewFlagSet(c.Env, "version", "", versionSummary)
	if err := fs.Parse(args, 0); err != nil {
		return err
	}
	rev := commit
	if info, ok := debug.ReadBuildInfo(); ok && rev == "" {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				rev = s.Value
			}
		}
	}
	if rev == "" {
		rev = "unknown"
	}
	fmt.Fprintf(c.Stdout, "hookbox %s\ncommit %s\n%s %s/%s\n", version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
