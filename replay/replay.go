// Package replay queues stored deliveries again: the one rule behind
// `hookbox replay` and the admin API's POST /api/replay. A Request says
// what to replay in the words a user gives (an event number, dead only,
// a period as RFC 3339 times or durations ago, a target); Parse checks it
// and Run carries it out on a store.
package replay

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"hookbox/config"
	"hookbox/dedupe"
	"hookbox/queue"
)

// Request is a replay as a user asks for it.
type Request struct {
	Event  int64  // one event's deliveries (0: none named)
	Dead   bool   // only dead deliveries
	Since  string // events received at or after: RFC 3339, or a duration ago ("2h", "7d")
	Until  string // with Since: received before
	Target string // only deliveries to this target
}

// FieldError is a mistake in one field of a Request: Field is the name
// both the CLI (as --Field, or the event argument) and the API (as the
// JSON key) give it.
type FieldError struct {
	Field string // "event", "dead", "since", "until", "target"
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// The messages of two FieldErrors, for a caller that words them its own way.
const (
	MsgNoSelection      = "give an event number, dead, or since"
	MsgUntilBeforeSince = "must be later than since"
)

// Store is what a replay needs of a store engine.
type Store interface {
	// GetEvent returns an error wrapping dedupe.ErrNotFound for an
	// unknown event.
	GetEvent(ctx context.Context, id int64) (dedupe.Stored, error)
	Replay(ctx context.Context, sel queue.ReplaySelector, now time.Time) (queue.Replayed, error)
	Backfill(ctx context.Context, sel queue.BackfillSelector, now time.Time) (queue.Backfilled, error)
}

// Parse checks r against the targets a config names (none: a config
// that only points at the store, which cannot tell a typo) and returns
// the selector it means at now. Its error is a *FieldError.
func Parse(r Request, targets []config.Target, now time.Time) (queue.ReplaySelector, error) {
	sel := queue.ReplaySelector{Event: r.Event, DeadOnly: r.Dead, Target: r.Target}
	if r.Event < 0 {
		return sel, &FieldError{"event", fmt.Sprintf("%d is not an event number", r.Event)}
	}
	var err error
	if sel.Since, err = ParseWhen(r.Since, now); err != nil {
		return sel, &FieldError{"since", err.Error()}
	}
	if sel.Until, err = ParseWhen(r.Until, now); err != nil {
		return sel, &FieldError{"until", err.Error()}
	}
	if !sel.Since.IsZero() && !sel.Until.IsZero() && !sel.Until.After(sel.Since) {
		return sel, &FieldError{"until", MsgUntilBeforeSince}
	}
	if sel.Event == 0 && !sel.DeadOnly && sel.Since.IsZero() {
		return sel, &FieldError{"event", MsgNoSelection}
	}
	if sel.Target != "" && len(targets) > 0 && !slices.ContainsFunc(targets, func(t config.Target) bool { return t.Name == sel.Target }) {
		names := make([]string, len(targets))
		for i, t := range targets {
			names[i] = t.Name
		}
		return sel, &FieldError{"target", fmt.Sprintf("%q: no such target in the config (targets: %s)", sel.Target, strings.Join(names, ", "))}
	}
	return sel, nil
}

// ParseWhen parses an RFC 3339 time or a duration before now ("2h",
// "7d"); "" is the zero time.
func ParseWhen(s string, now time.Time) (time.Time, error) {
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

// Result is what a replay did.
type Result struct {
	queue.Replayed
	// Target is the target a backfill gave deliveries for ("" if none ran).
	Target     string
	Backfilled queue.Backfilled
}

// Run queues again what sel selects (from Parse) and, when it names one
// of targets without DeadOnly, gives that target a delivery of each
// selected event it matches that has none (a target added or renamed
// since its events came). An unknown sel.Event is an error wrapping
// dedupe.ErrNotFound ("event N: event not found"), and nothing is queued.
func Run(ctx context.Context, s Store, sel queue.ReplaySelector, targets []config.Target, now time.Time) (Result, error) {
	if sel.Event > 0 {
		if _, err := s.GetEvent(ctx, sel.Event); err != nil {
			return Result{}, err
		}
	}
	r, err := s.Replay(ctx, sel, now)
	if err != nil {
		return Result{}, err
	}
	res := Result{Replayed: r}
	if i := slices.IndexFunc(targets, func(t config.Target) bool { return t.Name == sel.Target }); i >= 0 && !sel.DeadOnly {
		t := targets[i]
		b, err := s.Backfill(ctx, queue.BackfillSelector{Target: t.Name, Event: sel.Event, Since: sel.Since, Until: sel.Until, Matches: t.Matches}, now)
		if err != nil {
			return res, err
		}
		res.Target, res.Backfilled = t.Name, b
	}
	return res, nil
}

// Lines is what r did, in sentences: the first always says how many were
// queued again; the others, only where something happened.
func (r Result) Lines() []string {
	lines := []string{fmt.Sprintf("%s queued again; hookbox serve runs them within a second (at its next start if it is not running)", count(r.Queued, "delivery"))}
	if b := r.Backfilled; b.Queued > 0 {
		lines = append(lines, fmt.Sprintf("%s added for events that had none for %s (received before the target was added or renamed)", count(b.Queued, "delivery"), r.Target))
	}
	if b := r.Backfilled; b.Swept > 0 {
		lines = append(lines, fmt.Sprintf("%s for %s not added: their event's payload was removed by retention", count(b.Swept, "delivery"), r.Target))
	}
	if r.Swept > 0 {
		lines = append(lines, fmt.Sprintf("%s left out: their event's payload was removed by retention (retention.payloads), so they cannot run again", count(r.Swept, "delivery")))
	}
	if r.Running > 0 {
		lines = append(lines, fmt.Sprintf("%s left out: running (or about to run) now; once they finish, replay again to run them once more", count(r.Running, "delivery")))
	}
	if r.Changed > 0 {
		lines = append(lines, fmt.Sprintf("%s left out: they changed while the replay ran (claimed, revived and done, or swept)", count(r.Changed, "delivery")))
	}
	return lines
}

func count(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		noun = noun[:len(noun)-1] + "ie"
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
