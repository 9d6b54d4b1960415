package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"hookbox/config"
	"hookbox/handlers"
	"hookbox/internal/cli"
	"hookbox/receiver"
)

const checkSummary = "validate a config file: every bad key named, with its line"

// CheckCommand is `hookbox check`.
type CheckCommand struct{ cli.Env }

func (c *CheckCommand) Run(ctx context.Context, args []string) error {
	fs := cli.NewFlagSet(c.Env, "check", "", checkSummary)
	path := fs.String("config", "", "config `FILE` to check (default $HOOKBOX_CONFIG)")
	fs.Explain("Exit 0 when the config is valid (notes may follow), 1 naming each problem.")
	if err := fs.Parse(args, -1); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		if *path == "" && fs.NArg() == 1 && !strings.HasPrefix(fs.Arg(0), "-") {
			return cli.Usagef("check: the config is given with a flag: hookbox check --config %s", fs.Arg(0))
		}
		return cli.Usagef("check: unexpected argument %q (flags go before arguments)", fs.Arg(0))
	}
	*path = c.ConfigPath(*path)
	if *path == "" {
		return cli.Usagef("check: name the config with --config F or HOOKBOX_CONFIG")
	}
	cfg, err := config.Load(*path, c.Getenv)
	if err != nil {
		var list interface{ Unwrap() []error }
		if errors.As(err, &list) {
			for _, e := range list.Unwrap() {
				fmt.Fprintln(c.Stderr, e)
			}
			return fmt.Errorf("%s: %d problem(s)", *path, len(list.Unwrap()))
		}
		return err
	}
	if _, err := receiver.Sources(cfg.Sources); err != nil {
		return err
	}
	fmt.Fprintf(c.Stdout, "%s: ok (%s, %s, listen %s, store %s)\n",
		*path, cli.Count(len(cfg.Sources), "source"), cli.Count(len(cfg.Targets), "target"), cfg.Server.Listen, cfg.Store.Name())
	if note := storeNote(cfg.Store.Path); !cfg.Store.PostgreSQL() && note != "" {
		fmt.Fprintln(c.Stdout, "note: "+note)
	}
	for _, note := range handlers.ProgramNotes(cfg) {
		fmt.Fprintln(c.Stdout, "note: "+note)
	}
	return nil
}

// storeNote says what serve will create when the store is not there yet: a
// mistyped store.path would otherwise start an empty inbox somewhere else.
func storeNote(path string) string {
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return ""
	}
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return fmt.Sprintf("neither the store %s nor its directory %s exists yet; serve will create both (the directory with mode 0750)", path, dir)
	}
	return fmt.Sprintf("no store at %s yet; serve will create it", path)
}
