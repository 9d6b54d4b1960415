package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"hookbox/config"
	"hookbox/dedupe"
	"hookbox/handlers"
	"hookbox/queue"
	"hookbox/store"
)

const usage = `hookbox: a durable inbox for webhooks

Usage:
  hookbox serve   [--config F] [--log-level L] [--log-format json|console|auto]
                                               receive, store and deliver webhooks
  hookbox check   --config F                   validate a config file
  hookbox events  [--config F] [--source S] [--status ST] [--limit N] [--json]
  hookbox event   [--config F] [--body] [--json] ID
  hookbox dead    [--config F] [--json] [--all] [--limit N]   the dead-letter table
  hookbox replay  [--config F] (ID | --dead | --since T [--until T]) [--target NAME]
  hookbox version
  hookbox bench   [--mode ingest|e2e|command|rate] [--conns N] [--duration D] [--rounds N]
                  [--rate R] [--prefill N] [--backlog N] [--workers N] [--body-size B]
                  [--cpuprofile F] [--json]

Without --config, $HOOKBOX_CONFIG is used; without either, the local-sink
defaults (127.0.0.1:8080, ./hookbox.db). Flags come before arguments.
`

// usageError is a mistake in how a command was called (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// cli holds what every command needs from the process.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return &usageError{"no command given"}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return c.serve(ctx, rest)
	case "check":
		return c.check(rest)
	case "events":
		return c.events(ctx, rest)
	case "event":
		return c.event(ctx, rest)
	case "dead":
		return c.dead(ctx, rest)
	case "replay":
		return c.replay(ctx, rest)
	case "version":
		return c.version(rest)
	case "bench":
		return c.bench(ctx, rest)
	case "bench-server":
		return c.benchServer(ctx, rest)
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return &usageError{fmt.Sprintf("unknown command %q", cmd)}
	}
}

func (c *cli) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	return fs
}

// parse parses flags and checks the number of positional arguments (-1: any).
func (c *cli) parse(fs *flag.FlagSet, args []string, nargs int) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if nargs >= 0 && fs.NArg() != nargs {
		if fs.NArg() > nargs {
			return &usageError{fmt.Sprintf("%s: unexpected argument %q (flags go before arguments)", fs.Name(), fs.Arg(nargs))}
		}
		return &usageError{fmt.Sprintf("%s: missing argument", fs.Name())}
	}
	return nil
}

// loadConfig loads --config, else $HOOKBOX_CONFIG, else the local-sink
// defaults (local = true). getenv resolves the secrets; nil leaves them
// unresolved (config.LoadWithoutSecrets), for commands that only read the
// store.
func (c *cli) loadConfig(path string, getenv func(string) string) (cfg config.Config, local bool, err error) {
	if path == "" {
		path = c.getenv("HOOKBOX_CONFIG")
	}
	if path == "" {
		return config.LocalSink(), true, nil
	}
	if getenv == nil {
		cfg, err = config.LoadWithoutSecrets(path)
	} else {
		cfg, err = config.Load(path, getenv)
	}
	if err != nil {
		return config.Config{}, false, err
	}
	return cfg, false, nil
}

// openStore opens an existing store for the read commands.
func (c *cli) openStore(path string) (*store.DB, error) {
	_, db, err := c.openStoreConfig(path)
	return db, err
}

// openStoreConfig is openStore that also returns the config it read.
func (c *cli) openStoreConfig(path string) (config.Config, *store.DB, error) {
	// Reading the store needs its path, not the secrets: a read command run
	// without the service's environment must still work.
	cfg, _, err := c.loadConfig(path, nil)
	if err != nil {
		return cfg, nil, err
	}
	if _, err := os.Stat(cfg.Store.Path); err != nil {
		return cfg, nil, fmt.Errorf("no store at %s (start hookbox serve there first, or pass --config): %w", cfg.Store.Path, err)
	}
	// Never migrated from here: a serve of an older build may be running
	// on it, and its statements need the schema it knows.
	db, err := store.Open(cfg.Store.Path, store.Options{Synchronous: cfg.Store.Synchronous, NoMigrate: true, Logger: zerolog.Nop()})
	return cfg, db, err
}

func (c *cli) check(args []string) error {
	fs := c.flags("check")
	path := fs.String("config", "", "config file to check (default $HOOKBOX_CONFIG)")
	if err := c.parse(fs, args, 0); err != nil {
		return err
	}
	if *path == "" {
		*path = c.getenv("HOOKBOX_CONFIG")
	}
	if *path == "" {
		return &usageError{"check: name the config with --config F or HOOKBOX_CONFIG"}
	}
	cfg, err := config.Load(*path, c.getenv)
	if err != nil {
		var list interface{ Unwrap() []error }
		if errors.As(err, &list) {
			for _, e := range list.Unwrap() {
				fmt.Fprintln(c.stderr, e)
			}
			return fmt.Errorf("%s: %d problem(s)", *path, len(list.Unwrap()))
		}
		return err
	}
	if _, err := buildSources(cfg); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s: ok (%s, %s, listen %s, store %s)\n",
		*path, count(len(cfg.Sources), "source"), count(len(cfg.Targets), "target"), cfg.Server.Listen, cfg.Store.Path)
	if note := storeNote(cfg.Store.Path); note != "" {
		fmt.Fprintln(c.stdout, "note: "+note)
	}
	for _, note := range handlers.ProgramNotes(cfg) {
		fmt.Fprintln(c.stdout, "note: "+note)
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

// eventLine is the --json form of an event, one a line.
type eventLine struct {
	ID           int64          `json:"id"`
	Source       string         `json:"source"`
	EventID      string         `json:"event_id"`
	Type         string         `json:"type"`
	ReceivedAt   string         `json:"received_at"`
	Redeliveries int64          `json:"redeliveries"`
	Conflicts    int64          `json:"conflicts"`
	BodySize     int64          `json:"body_size"`
	Swept        bool           `json:"swept,omitempty"`
	Deliveries   []deliveryLine `json:"deliveries"`
}

// newEventLine is the JSON line of an event, for events and event alike.
func newEventLine(e dedupe.Stored, deliveries []deliveryLine) eventLine {
	return eventLine{
		ID: e.ID, Source: e.Source, EventID: e.EventID, Type: e.Type, ReceivedAt: rfc(e.ReceivedAt),
		Redeliveries: e.Redeliveries, Conflicts: e.Conflicts, BodySize: e.BodySize, Swept: e.Swept,
		Deliveries: deliveries,
	}
}

type deliveryLine struct {
	Target     string        `json:"target"`
	Status     string        `json:"status"`
	Attempts   int           `json:"attempts"`
	LastError  string        `json:"last_error"`
	DeadReason string        `json:"dead_reason,omitempty"` // why dead before its attempts were spent; "reason" is a skipped delivery's
	NextAt     string        `json:"next_at,omitempty"`
	DoneAt     string        `json:"done_at,omitempty"`
	History    []attemptLine `json:"history,omitempty"`
}

type attemptLine struct {
	Attempt    int    `json:"attempt"`
	StartedAt  string `json:"started_at"`
	DurationMS int64  `json:"duration_ms"`
	Outcome    string `json:"outcome"`
	HTTPStatus int    `json:"http_status,omitempty"`
	ExitCode   *int   `json:"exit_code,omitempty"`
	Error      string `json:"error,omitempty"`
	Output     string `json:"output,omitempty"`
}

func rfc(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func toDeliveryLines(ds []queue.Delivery) []deliveryLine {
	out := make([]deliveryLine, 0, len(ds))
	for _, d := range ds {
		l := deliveryLine{Target: d.Target, Status: d.Status, Attempts: d.Attempts, LastError: d.LastError, DoneAt: rfc(d.DoneAt)}
		if d.Status == queue.Dead {
			l.DeadReason = d.DeadReason
		}
		if d.Status == queue.Pending || d.Status == queue.Retrying {
			l.NextAt = rfc(d.RunAt)
		}
		out = append(out, l)
	}
	return out
}

func (c *cli) events(ctx context.Context, args []string) error {
	fs := c.flags("events")
	path := fs.String("config", "", "config file (default $HOOKBOX_CONFIG)")
	source := fs.String("source", "", "only this source")
	status := fs.String("status", "", "only events with a delivery in this status (pending, running, retrying, done, dead, skipped)")
	limit := fs.Int("limit", 50, "at most this many events (0: all)")
	asJSON := fs.Bool("json", false, "one JSON object a line")
	if err := c.parse(fs, args, 0); err != nil {
		return err
	}
	switch *status {
	case "", queue.Pending, queue.Running, queue.Retrying, queue.Done, queue.Dead, queue.Skipped:
	default:
		return &usageError{fmt.Sprintf("events: --status %q: want pending, running, retrying, done, dead or skipped", *status)}
	}
	if *limit < 0 {
		return &usageError{"events: --limit must be 0 or more"}
	}
	db, err := c.openStore(*path)
	if err != nil {
		return err
	}
	defer db.Close()
	// A page at a time, newest first: --limit 0 on a store of millions
	// streams rather than loading every event.
	events, q := dedupe.New(db), queue.New(db)
	total, before := 0, int64(0)
	var tw *tabwriter.Writer
	if !*asJSON {
		tw = tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tRECEIVED\tSOURCE\tEVENT ID\tTYPE\tREDELIVERIES\tDELIVERIES")
	}
	for *limit == 0 || total < *limit {
		page := eventsPage
		if *limit > 0 {
			page = min(page, *limit-total)
		}
		list, err := events.List(ctx, dedupe.Filter{Source: *source, Status: *status, Limit: page, Before: before})
		if err != nil {
			return err
		}
		if len(list) == 0 {
			break
		}
		if err := c.writeEvents(ctx, q, list, *asJSON, tw); err != nil {
			return err
		}
		total += len(list)
		before = list[len(list)-1].ID
		// The table's columns are aligned over everything written before a
		// flush: every 10,000 rows keeps a long listing out of memory.
		if tw != nil && total%(10*eventsPage) == 0 {
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		if len(list) < page {
			break
		}
	}
	if tw != nil {
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if total == 0 {
		if *source != "" || *status != "" {
			fmt.Fprintln(c.stderr, "no events match")
		} else {
			fmt.Fprintln(c.stderr, "no events stored yet")
		}
	}
	return nil
}

// eventsPage is how many events `hookbox events` reads at a time.
const eventsPage = 1000

// writeEvents writes one page of `hookbox events`: JSON lines, or rows of tw.
func (c *cli) writeEvents(ctx context.Context, q *queue.Queue, list []dedupe.Stored, asJSON bool, tw *tabwriter.Writer) error {
	ids := make([]int64, len(list))
	for i, e := range list {
		ids[i] = e.ID
	}
	deliveries, err := q.Deliveries(ctx, ids)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(c.stdout)
		for _, e := range list {
			if err := enc.Encode(newEventLine(e, toDeliveryLines(deliveries[e.ID]))); err != nil {
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
		dl := orDash(strings.Join(ds, " "))
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\n", e.ID, rfc(e.ReceivedAt), printable(e.Source), printable(e.EventID), printable(orDash(e.Type)), e.Redeliveries, dl)
	}
	return nil
}

func (c *cli) event(ctx context.Context, args []string) error {
	fs := c.flags("event")
	path := fs.String("config", "", "config file (default $HOOKBOX_CONFIG)")
	body := fs.Bool("body", false, "write the raw body bytes exactly, nothing else")
	asJSON := fs.Bool("json", false, "one JSON object")
	if err := c.parse(fs, args, -1); err != nil {
		return err
	}
	switch fs.NArg() {
	case 0:
		return &usageError{"event: missing the event's ID (the ID column of hookbox events)"}
	case 1:
	default:
		return &usageError{fmt.Sprintf("event: unexpected argument %q (flags go before arguments)", fs.Arg(1))}
	}
	id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
	if err != nil || id <= 0 {
		return &usageError{fmt.Sprintf("event: %q is not an event number (see the ID column of hookbox events)", fs.Arg(0))}
	}
	db, err := c.openStore(*path)
	if err != nil {
		return err
	}
	defer db.Close()
	e, err := dedupe.New(db).Get(ctx, id)
	if err != nil {
		return err
	}
	if *body {
		if e.Swept {
			return fmt.Errorf("event %d: the body was removed by retention", id)
		}
		_, err := c.stdout.Write(e.Body)
		return err
	}
	q := queue.New(db)
	dmap, err := q.Deliveries(ctx, []int64{id})
	if err != nil {
		return err
	}
	lines := toDeliveryLines(dmap[id])
	for i, d := range dmap[id] {
		attempts, err := q.Attempts(ctx, d.ID)
		if err != nil {
			return err
		}
		for _, a := range attempts {
			lines[i].History = append(lines[i].History, attemptLine{
				Attempt: a.Number, StartedAt: a.StartedAt.UTC().Format(time.RFC3339Nano), DurationMS: a.Duration.Milliseconds(),
				Outcome: a.Outcome, HTTPStatus: a.HTTPStatus, ExitCode: a.ExitCode, Error: a.Error, Output: a.Output,
			})
		}
	}
	if *asJSON {
		return json.NewEncoder(c.stdout).Encode(struct {
			eventLine
			LastSeenAt  string              `json:"last_seen_at,omitempty"`
			ContentType string              `json:"content_type"`
			Headers     map[string][]string `json:"headers"`
		}{
			eventLine:  newEventLine(e, lines),
			LastSeenAt: rfc(e.LastSeenAt), ContentType: e.ContentType, Headers: e.Headers,
		})
	}
	w := c.stdout
	fmt.Fprintf(w, "event %d\n  source:       %s\n  event id:     %s\n  type:         %s\n  received:     %s\n  body:         %d bytes (%s)\n",
		e.ID, printable(e.Source), printable(e.EventID), printable(orDash(e.Type)), rfc(e.ReceivedAt), e.BodySize, printable(orDash(e.ContentType)))
	fmt.Fprintf(w, "  redeliveries: %d", e.Redeliveries)
	if !e.LastSeenAt.IsZero() {
		fmt.Fprintf(w, " (last %s)", rfc(e.LastSeenAt))
	}
	if e.Conflicts > 0 {
		fmt.Fprintf(w, ", %d with a different body", e.Conflicts)
	}
	fmt.Fprintln(w)
	if e.Swept {
		fmt.Fprintln(w, "  payload and headers removed by retention")
	}
	if len(e.Headers) > 0 {
		fmt.Fprintln(w, "headers:")
		for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
			for _, v := range e.Headers[k] {
				fmt.Fprintf(w, "  %s: %s\n", k, printable(v))
			}
		}
	}
	if len(lines) == 0 {
		fmt.Fprintln(w, "deliveries: none (no target matches this source and type)")
	} else {
		fmt.Fprintln(w, "deliveries:")
	}
	for _, d := range lines {
		fmt.Fprintf(w, "  %s: %s after %d attempt(s)", d.Target, d.Status, d.Attempts)
		if d.DeadReason != "" {
			fmt.Fprintf(w, " (%s)", d.DeadReason)
		}
		if d.NextAt != "" {
			fmt.Fprintf(w, ", next at %s", d.NextAt)
		}
		if d.DoneAt != "" {
			fmt.Fprintf(w, ", at %s", d.DoneAt)
		}
		fmt.Fprintln(w)
		if d.LastError != "" {
			fmt.Fprintf(w, "    last error: %s\n", printable(d.LastError))
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
				fmt.Fprintf(w, " error: %s", printable(a.Error))
			}
			fmt.Fprintln(w)
			if a.Output != "" {
				for _, l := range strings.Split(strings.TrimRight(a.Output, "\n"), "\n") {
					fmt.Fprintf(w, "       | %s\n", printable(l))
				}
			}
		}
	}
	return nil
}

// printable is s for a terminal: control characters other than tab (an
// escape sequence in a target's output could clear the screen or retitle
// the window) written as \xNN. --json output escapes them anyway.
func printable(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i]) // a byte that is not UTF-8
		case isControl(r) && r <= 0xff:
			fmt.Fprintf(&b, "\\x%02x", r)
		case isControl(r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// isControl: control characters but tab, and the bidirectional controls
// that make text read as something else.
func isControl(r rune) bool {
	return (r != '\t' && unicode.IsControl(r)) || unicode.Is(unicode.Bidi_Control, r)
}

// count is "1 delivery", "2 deliveries", "0 sources".
func count[N int | int64](n N, noun string) string {
	if n != 1 {
		if strings.HasSuffix(noun, "y") {
			noun = strings.TrimSuffix(noun, "y") + "ies"
		} else {
			noun += "s"
		}
	}
	return fmt.Sprintf("%d %s", n, noun)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// deadLine is the --json form of a dead letter.
type deadLine struct {
	ID         int64  `json:"id"`
	Event      int64  `json:"event"`
	Source     string `json:"source"`
	EventID    string `json:"event_id"`
	Type       string `json:"type"`
	Target     string `json:"target"`
	Attempts   int    `json:"attempts"`
	Error      string `json:"error"`
	DeadAt     string `json:"dead_at"`
	AlertedAt  string `json:"alerted_at,omitempty"`
	AlertError string `json:"alert_error,omitempty"` // the last failed send's error, until one succeeds
	RevivedAt  string `json:"revived_at,omitempty"`
}

// alertState is the ALERT column of `hookbox dead`.
func alertState(d queue.DeadLetter) string {
	switch {
	case !d.AlertedAt.IsZero():
		return "sent"
	case d.AlertErr != "":
		return "failed: " + d.AlertErr
	}
	return "-"
}

func (c *cli) dead(ctx context.Context, args []string) error {
	fs := c.flags("dead")
	path := fs.String("config", "", "config file (default $HOOKBOX_CONFIG)")
	asJSON := fs.Bool("json", false, "one JSON object a line")
	all := fs.Bool("all", false, "include dead letters already revived by a redelivery or replay")
	limit := fs.Int("limit", 0, "at most this many (0: all)")
	if err := c.parse(fs, args, 0); err != nil {
		return err
	}
	if *limit < 0 {
		return &usageError{"dead: --limit must be 0 or more"}
	}
	db, err := c.openStore(*path)
	if err != nil {
		return err
	}
	defer db.Close()
	list, err := queue.New(db).DeadLetters(ctx, *all, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		for _, d := range list {
			if err := enc.Encode(deadLine{ID: d.ID, Event: d.Event, Source: d.Source, EventID: d.EventID, Type: d.Type, Target: d.Target,
				Attempts: d.Attempts, Error: d.Error, DeadAt: rfc(d.DeadAt), AlertedAt: rfc(d.AlertedAt), AlertError: d.AlertErr,
				RevivedAt: rfc(d.RevivedAt)}); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	header := "EVENT\tDEAD AT\tSOURCE\tEVENT ID\tTARGET\tATTEMPTS\tERROR\tALERT"
	if *all {
		header += "\tREVIVED" // when a redelivery or replay put it back
	}
	fmt.Fprintln(tw, header)
	for _, d := range list {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s", d.Event, rfc(d.DeadAt), printable(d.Source), printable(d.EventID), d.Target, d.Attempts, printable(d.Error), printable(alertState(d)))
		if *all {
			fmt.Fprintf(tw, "\t%s", orDash(rfc(d.RevivedAt)))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(c.stderr, "no dead letters")
	}
	return nil
}

func (c *cli) replay(ctx context.Context, args []string) error {
	fs := c.flags("replay")
	path := fs.String("config", "", "config file (default $HOOKBOX_CONFIG)")
	dead := fs.Bool("dead", false, "replay every dead delivery")
	since := fs.String("since", "", "replay events received at or after this time (RFC3339, or a duration ago like 2h or 7d)")
	until := fs.String("until", "", "with --since: received before this time")
	target := fs.String("target", "", "only deliveries to this target")
	if err := c.parse(fs, args, -1); err != nil {
		return err
	}
	var sel queue.ReplaySelector
	sel.DeadOnly, sel.Target = *dead, *target
	switch fs.NArg() {
	case 0:
	case 1:
		id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
		if err != nil || id <= 0 {
			return &usageError{fmt.Sprintf("replay: %q is not an event number", fs.Arg(0))}
		}
		sel.Event = id
	default:
		return &usageError{"replay: give at most one event number"}
	}
	now := time.Now()
	var err error
	if sel.Since, err = parseWhen(*since, now); err != nil {
		return &usageError{"replay: --since: " + err.Error()}
	}
	if sel.Until, err = parseWhen(*until, now); err != nil {
		return &usageError{"replay: --until: " + err.Error()}
	}
	if !sel.Since.IsZero() && !sel.Until.IsZero() && !sel.Until.After(sel.Since) {
		return &usageError{"replay: --until must be later than --since"}
	}
	if sel.Event == 0 && !sel.DeadOnly && sel.Since.IsZero() {
		return &usageError{"replay: give an event number, --dead, or --since"}
	}
	cfg, db, err := c.openStoreConfig(*path)
	if err != nil {
		return err
	}
	defer db.Close()
	// A config with targets (serve's) names them all; one that only points
	// at the store cannot tell a typo.
	if sel.Target != "" && len(cfg.Targets) > 0 && !slices.ContainsFunc(cfg.Targets, func(t config.Target) bool { return t.Name == sel.Target }) {
		names := make([]string, len(cfg.Targets))
		for i, t := range cfg.Targets {
			names[i] = t.Name
		}
		return &usageError{fmt.Sprintf("replay: --target %q: no such target in the config (targets: %s)", sel.Target, strings.Join(names, ", "))}
	}
	if sel.Event > 0 {
		if _, err := dedupe.New(db).Get(ctx, sel.Event); err != nil {
			return err // "event N: event not found", as hookbox event says
		}
	}
	r, err := queue.New(db).Replay(ctx, sel, now)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s queued again; hookbox serve runs them within a second (at its next start if it is not running)\n", count(r.Queued, "delivery"))
	if r.Swept > 0 {
		fmt.Fprintf(c.stdout, "%s left out: their event's payload was removed by retention (retention.payloads), so they cannot run again\n", count(r.Swept, "delivery"))
	}
	if r.Running > 0 {
		fmt.Fprintf(c.stdout, "%s left out: running (or about to run) now; once they finish, replay again to run them once more\n", count(r.Running, "delivery"))
	}
	if r.Changed > 0 {
		fmt.Fprintf(c.stdout, "%s left out: they changed while the replay ran (claimed, revived and done, or swept)\n", count(r.Changed, "delivery"))
	}
	return nil
}

// parseWhen parses an RFC3339 time or a duration before now ("2h", "7d").
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := config.ParseDuration(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither an RFC3339 time nor a duration like 2h or 7d", s)
	}
	return now.Add(-d), nil
}

func (c *cli) version(args []string) error {
	fs := c.flags("version")
	if err := c.parse(fs, args, 0); err != nil {
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
	fmt.Fprintf(c.stdout, "hookbox %s\ncommit %s\n%s %s/%s\n", version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
