// Package cli holds what every hookbox command shares: the process's
// streams and environment, flag parsing with hookbox's rules (flags before
// arguments, --help on stdout with exit 0, a usage mistake reported once
// with exit 2), the config and store the read commands open, and text that
// is safe on a terminal.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"hookbox/config"
	"hookbox/dedupe"
	"hookbox/order"
	"hookbox/postgres"
	"hookbox/queue"
	"hookbox/sqlite"
	"hookbox/view"
)

// Env is what a command takes from the process; tests give their own.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
}

// UsageError is a mistake in how a command was called: exit 2.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{fmt.Sprintf(format, args...)}
}

// ErrHelp is returned once a command's --help was printed: exit 0.
var ErrHelp = errors.New("help printed")

// ExitCode is the process's exit status for what a command returned, after
// writing its message (if any) to stderr.
func ExitCode(err error, stderr io.Writer) int {
	var ue *UsageError
	switch {
	case err == nil, errors.Is(err, ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "hookbox:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "hookbox:", err)
		return 1
	}
}

// FlagSet is one command's flags with its usage: its name, the arguments
// it takes after the flags, and a one-line summary.
type FlagSet struct {
	*flag.FlagSet
	env     Env
	args    string
	summary string
	more    string
}

// NewFlagSet returns the flags of `hookbox name`. args is the synopsis of
// the positional arguments ("ID", "" for none); summary says what the
// command does, in one line.
func NewFlagSet(env Env, name, args, summary string) *FlagSet {
	fs := &FlagSet{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), env: env, args: args, summary: summary}
	// The flag package's own messages would come before ours: one
	// message per mistake, written by ExitCode.
	fs.SetOutput(io.Discard)
	return fs
}

// Explain adds text after the flags in --help (arguments, examples).
func (fs *FlagSet) Explain(text string) { fs.more = text }

// Usage writes the command's help to w.
func (fs *FlagSet) Usage(w io.Writer) {
	fmt.Fprintf(w, "usage: hookbox %s", fs.Name())
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, " [flags]")
	}
	if fs.args != "" {
		fmt.Fprint(w, " "+fs.args)
	}
	fmt.Fprintf(w, "\n\n%s%s.\n", strings.ToUpper(fs.summary[:1]), fs.summary[1:])
	if n > 0 {
		fmt.Fprintln(w, "\nFlags:")
		fs.VisitAll(func(f *flag.Flag) {
			name, use := flag.UnquoteUsage(f)
			line := "  --" + f.Name
			if name != "" {
				line += " " + name
			}
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
				use += fmt.Sprintf(" (default %s)", f.DefValue)
			}
			fmt.Fprintf(w, "%-22s %s\n", line, use)
		})
	}
	if fs.more != "" {
		fmt.Fprintln(w, "\n"+strings.TrimRight(fs.more, "\n"))
	}
}

// Parse parses args and checks the number of positional arguments (-1:
// any). --help prints the usage on stdout and returns ErrHelp; a mistake
// returns one UsageError that names the command.
func (fs *FlagSet) Parse(args []string, nargs int) error {
	if err := fs.FlagSet.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage(fs.env.Stdout)
			return ErrHelp
		}
		return Usagef("%s: %v (see hookbox %s --help)", fs.Name(), err, fs.Name())
	}
	if nargs >= 0 && fs.NArg() != nargs {
		if fs.NArg() > nargs {
			return Usagef("%s: unexpected argument %q (flags go before arguments)", fs.Name(), fs.Arg(nargs))
		}
		return Usagef("%s: missing argument (see hookbox %s --help)", fs.Name(), fs.Name())
	}
	return nil
}

// ConfigPath is path, else $HOOKBOX_CONFIG; "" means none.
func (e Env) ConfigPath(path string) string {
	if path == "" {
		path = e.Getenv("HOOKBOX_CONFIG")
	}
	return path
}

// LoadConfig loads --config, else $HOOKBOX_CONFIG, else the local-sink
// defaults (local = true). With secrets false the secrets are left
// unresolved (config.LoadWithoutSecrets): the commands that only read the
// store must work without the service's environment.
func (e Env) LoadConfig(path string, secrets bool) (cfg config.Config, local bool, err error) {
	path = e.ConfigPath(path)
	if path == "" {
		return config.LocalSink(), true, nil
	}
	if secrets {
		cfg, err = config.Load(path, e.Getenv)
	} else {
		cfg, err = config.LoadWithoutSecrets(path)
	}
	if err != nil {
		return config.Config{}, false, err
	}
	return cfg, false, nil
}

// Store is what the read commands (events, event, dead, replay, pause) need of
// a store engine; sqlite.DB and postgres.DB have it.
type Store interface {
	view.Store
	ListEvents(ctx context.Context, f dedupe.Filter) ([]dedupe.Stored, error)
	DeadLetters(ctx context.Context, all bool, limit int) ([]queue.DeadLetter, error)
	Replay(ctx context.Context, sel queue.ReplaySelector, now time.Time) (queue.Replayed, error)
	Backfill(ctx context.Context, sel queue.BackfillSelector, now time.Time) (queue.Backfilled, error)
	Pause(ctx context.Context, target string, now time.Time) (queue.PauseResult, error)
	Resume(ctx context.Context, target string, now time.Time) (queue.PauseResult, error)
	Paused(ctx context.Context) ([]queue.PausedTarget, error)
	view.LaneStore
	SetOrder(lanes map[string]order.Lane)
	Close() error
}

// OpenStore opens the existing store of the config at path (see
// LoadConfig) for a read command, and returns the config too.
func (e Env) OpenStore(path string) (config.Config, Store, error) {
	cfg, _, err := e.LoadConfig(path, false)
	if err != nil {
		return cfg, nil, err
	}
	if cfg.Store.PostgreSQL() {
		getenv := e.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		u, err := cfg.Store.DatabaseURL(getenv)
		if err != nil {
			return cfg, nil, err
		}
		// Never migrated from here, as a SQLite store is not.
		db, err := postgres.Open(context.Background(), u, postgres.Options{MaxConns: 2, NoMigrate: true, Logger: zerolog.Nop()})
		if err != nil {
			return cfg, nil, err
		}
		db.SetOrder(cfg.Lanes()) // a replay queues into the lanes
		return cfg, db, nil
	}
	if _, err := os.Stat(cfg.Store.Path); err != nil {
		return cfg, nil, fmt.Errorf("no store at %s (start hookbox serve there first, or pass --config): %w", cfg.Store.Path, err)
	}
	// Never migrated from here: a serve of an older build may be running
	// on it, and its statements need the schema it knows.
	db, err := sqlite.Open(cfg.Store.Path, sqlite.Options{Synchronous: cfg.Store.Synchronous, NoMigrate: true, Logger: zerolog.Nop()})
	if err != nil {
		return cfg, nil, err
	}
	db.SetOrder(cfg.Lanes()) // a replay queues into the lanes
	return cfg, db, nil
}
