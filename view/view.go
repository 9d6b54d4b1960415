// Package view is the one rendering of stored events, deliveries, attempts
// and dead letters that hookbox shows: the JSON lines of `hookbox events`,
// `event` and `dead`, and the table rows built from them.
package view

import (
	"context"
	"fmt"
	"time"

	"hookbox/dedupe"
	"hookbox/queue"
)

// Event is an event as listed: the --json line of `hookbox events`.
type Event struct {
	ID           int64  `json:"id"`
	Source       string `json:"source"`
	EventID      string `json:"event_id"`
	Type         string `json:"type"`
	ReceivedAt   string `json:"received_at"`
	Redeliveries int64  `json:"redeliveries"`
	Conflicts    int64  `json:"conflicts"`
	BodySize     int64  `json:"body_size"`
	Swept        bool   `json:"swept,omitempty"`
	// OrderKey and OrderVersion are the event's order key and version as
	// found, where its source has them; VersionUnreadable says the version
	// is neither a number nor an RFC 3339 time (ordered by receipt).
	OrderKey          string     `json:"order_key,omitempty"`
	OrderVersion      string     `json:"order_version,omitempty"`
	VersionUnreadable bool       `json:"order_version_unreadable,omitempty"`
	Deliveries        []Delivery `json:"deliveries"`
}

// NewEvent is the view of e with its deliveries.
func NewEvent(e dedupe.Stored, deliveries []queue.Delivery) Event {
	return Event{
		ID: e.ID, Source: e.Source, EventID: e.EventID, Type: e.Type, ReceivedAt: Time(e.ReceivedAt),
		Redeliveries: e.Redeliveries, Conflicts: e.Conflicts, BodySize: e.BodySize, Swept: e.Swept,
		OrderKey: e.OrderKey, OrderVersion: e.OrderVersion, VersionUnreadable: e.OrderVersion != "" && e.OrderRank == "",
		Deliveries: Deliveries(deliveries),
	}
}

// Delivery is one (event, target) pair.
type Delivery struct {
	Target    string `json:"target"`
	Status    string `json:"status"`
	Attempts  int    `json:"attempts"`
	LastError string `json:"last_error"`
	// DeadReason says why a dead delivery went dead before its attempts
	// were spent (a permanent failure, its payload swept, its target
	// gone); "reason" is reserved for a skipped delivery's.
	DeadReason string `json:"dead_reason,omitempty"`
	// Reason says why a skipped delivery was skipped ("stale: …",
	// "superseded by #N").
	Reason string `json:"reason,omitempty"`
	// Lane is the order key of a delivery to an ordered target; Waiting
	// is set while it waits behind its lane's head, LanePosition its place
	// in the lane (1 the head; `hookbox event` only).
	Lane         string    `json:"lane,omitempty"`
	Waiting      bool      `json:"waiting,omitempty"`
	LanePosition int64     `json:"lane_position,omitempty"`
	NextAt       string    `json:"next_at,omitempty"`
	DoneAt       string    `json:"done_at,omitempty"`
	History      []Attempt `json:"history,omitempty"`
}

// Deliveries is the view of ds, in their order.
func Deliveries(ds []queue.Delivery) []Delivery {
	out := make([]Delivery, 0, len(ds))
	for _, d := range ds {
		l := Delivery{Target: d.Target, Status: d.Status, Attempts: d.Attempts, LastError: d.LastError, DoneAt: Time(d.DoneAt)}
		if d.Status == queue.Dead {
			l.DeadReason = d.DeadReason
		}
		if d.Status == queue.Skipped {
			l.Reason = d.SkipReason
		}
		l.Lane, l.Waiting = d.Lane, d.Waiting
		if (d.Status == queue.Pending || d.Status == queue.Retrying) && !d.Waiting {
			l.NextAt = Time(d.RunAt)
		}
		out = append(out, l)
	}
	return out
}

// Attempt is one run of a delivery.
type Attempt struct {
	Attempt    int    `json:"attempt"`
	StartedAt  string `json:"started_at"`
	DurationMS int64  `json:"duration_ms"`
	Outcome    string `json:"outcome"`
	HTTPStatus int    `json:"http_status,omitempty"`
	ExitCode   *int   `json:"exit_code,omitempty"`
	Error      string `json:"error,omitempty"`
	Output     string `json:"output,omitempty"`
}

// NewAttempt is the view of a.
func NewAttempt(a queue.Attempt) Attempt {
	return Attempt{
		Attempt: a.Number, StartedAt: a.StartedAt.UTC().Format(time.RFC3339Nano), DurationMS: a.Duration.Milliseconds(),
		Outcome: a.Outcome, HTTPStatus: a.HTTPStatus, ExitCode: a.ExitCode, Error: a.Error, Output: a.Output,
	}
}

// Detail is one event in full: the --json object of `hookbox event`.
type Detail struct {
	Event
	LastSeenAt  string              `json:"last_seen_at,omitempty"`
	ContentType string              `json:"content_type"`
	Headers     map[string][]string `json:"headers"`
	// Body is the stored body (nil once retention dropped it); not part
	// of the JSON, whose readers ask for it with --body.
	Body []byte `json:"-"`
	// Secret is which of its source's secrets verified the event,
	// counting from 1 in the config's order, of Secrets, how many the
	// source had then; both 0 when no secret was checked (an unsigned
	// source, the local sink, an event stored before hookbox kept this).
	// A redelivery keeps the first copy's.
	Secret  int `json:"secret,omitempty"`
	Secrets int `json:"secrets,omitempty"`
	// ConflictCopies are the kept copies that arrived with the event's id
	// but another body (the latest dedupe.KeptConflicts), oldest first;
	// retention removes them with the body.
	ConflictCopies []Conflict `json:"conflict_copies,omitempty"`
}

// SecretText is "secret 2 of 3", or "" when no secret was checked.
func (d Detail) SecretText() string {
	if d.Secrets == 0 {
		return ""
	}
	return fmt.Sprintf("secret %d of %d", d.Secret, d.Secrets)
}

// Conflict is a copy of an event that came with another body.
type Conflict struct {
	ReceivedAt  string              `json:"received_at"`
	BodySize    int64               `json:"body_size"`
	ContentType string              `json:"content_type"`
	Headers     map[string][]string `json:"headers,omitempty"`
	// Body is the copy's body; not part of the JSON of `hookbox event`.
	Body []byte `json:"-"`
}

// NewConflict is the view of c.
func NewConflict(c dedupe.Conflict) Conflict {
	return Conflict{ReceivedAt: Time(c.ReceivedAt), BodySize: c.BodySize, ContentType: c.ContentType, Headers: c.Headers, Body: c.Body}
}

// Store is what LoadDetail reads: a store engine.
type Store interface {
	// GetEvent returns the event numbered id, with headers and body, or
	// an error wrapping dedupe.ErrNotFound.
	GetEvent(ctx context.Context, id int64) (dedupe.Stored, error)
	// Deliveries returns the deliveries of events, by event.
	Deliveries(ctx context.Context, events []int64) (map[int64][]queue.Delivery, error)
	// Attempts returns the attempts of a delivery, oldest first.
	Attempts(ctx context.Context, delivery int64) ([]queue.Attempt, error)
	// Conflicts returns the kept copies of an event that came with
	// another body, oldest first.
	Conflicts(ctx context.Context, event int64) ([]dedupe.Conflict, error)
}

// LoadDetail reads event id with its deliveries and every attempt. The
// error wraps dedupe.ErrNotFound for an unknown id.
func LoadDetail(ctx context.Context, s Store, id int64) (Detail, error) {
	e, err := s.GetEvent(ctx, id)
	if err != nil {
		return Detail{}, err
	}
	dmap, err := s.Deliveries(ctx, []int64{id})
	if err != nil {
		return Detail{}, err
	}
	d := Detail{
		Event:      NewEvent(e, dmap[id]),
		LastSeenAt: Time(e.LastSeenAt), ContentType: e.ContentType, Headers: e.Headers, Body: e.Body,
	}
	if e.SecretCount > 0 {
		d.Secret, d.Secrets = e.SecretIndex+1, e.SecretCount
	}
	if e.Conflicts > 0 {
		cs, err := s.Conflicts(ctx, id)
		if err != nil {
			return Detail{}, err
		}
		for _, c := range cs {
			d.ConflictCopies = append(d.ConflictCopies, NewConflict(c))
		}
	}
	for i, dl := range dmap[id] {
		attempts, err := s.Attempts(ctx, dl.ID)
		if err != nil {
			return Detail{}, err
		}
		if ls, ok := s.(LaneStore); ok && dl.Lane != "" {
			if d.Deliveries[i].LanePosition, err = ls.LanePosition(ctx, dl.ID); err != nil {
				return Detail{}, err
			}
		}
		for _, a := range attempts {
			d.Deliveries[i].History = append(d.Deliveries[i].History, NewAttempt(a))
		}
	}
	return d, nil
}

// Dead is a dead letter: the --json line of `hookbox dead`.
type Dead struct {
	ID         int64  `json:"id"`
	Event      int64  `json:"event"`
	Source     string `json:"source"`
	EventID    string `json:"event_id"`
	Type       string `json:"type"`
	Target     string `json:"target"`
	Attempts   int    `json:"attempts"`
	Error      string `json:"error"`
	DeadAt     string `json:"dead_at"`
	Alert      string `json:"alert"` // AlertState
	AlertedAt  string `json:"alerted_at,omitempty"`
	AlertError string `json:"alert_error,omitempty"` // the last failed send's error, until one succeeds
	RevivedAt  string `json:"revived_at,omitempty"`
}

// NewDead is the view of d.
func NewDead(d queue.DeadLetter) Dead {
	return Dead{ID: d.ID, Event: d.Event, Source: d.Source, EventID: d.EventID, Type: d.Type, Target: d.Target,
		Attempts: d.Attempts, Error: d.Error, DeadAt: Time(d.DeadAt), Alert: AlertState(d), AlertedAt: Time(d.AlertedAt),
		AlertError: d.AlertErr, RevivedAt: Time(d.RevivedAt)}
}

// The states of a dead letter's alert.
const (
	AlertNone     = "none"     // no [alert] configured when it went dead, or not needed (revived first)
	AlertPending  = "pending"  // due, not tried yet
	AlertSent     = "sent"     // delivered to the alert URL or command
	AlertRetrying = "retrying" // a send failed; it is tried again
	AlertGaveUp   = "gave up"  // every try failed; it is not tried again
)

// AlertState says where d's alert stands.
func AlertState(d queue.DeadLetter) string {
	switch {
	case !d.AlertedAt.IsZero():
		return AlertSent
	case !d.AlertDueAt.IsZero() && d.AlertErr != "":
		return AlertRetrying
	case !d.AlertDueAt.IsZero():
		return AlertPending
	case d.AlertErr != "":
		return AlertGaveUp
	}
	return AlertNone
}

// Time is t as RFC 3339 in UTC, or "" for the zero time.
func Time(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// LaneStore is what the lane views read: a store engine.
type LaneStore interface {
	// Lanes lists lanes by target and key, as f selects them.
	Lanes(ctx context.Context, f queue.LaneFilter) ([]queue.Lane, error)
	// LanePosition is a queued delivery's place in its lane (1 the head),
	// 0 when it is in none or finished.
	LanePosition(ctx context.Context, delivery int64) (int64, error)
}

// Lane is a lane: the --json line of `hookbox lanes`.
type Lane struct {
	Target       string `json:"target"`
	Key          string `json:"key"`
	HeadEvent    int64  `json:"head_event,omitempty"` // the event whose delivery is at the head; none when idle
	HeadStatus   string `json:"head_status,omitempty"`
	Queued       int64  `json:"queued"` // waiting behind the head
	LastVersion  string `json:"last_version,omitempty"`
	LastEvent    int64  `json:"last_event,omitempty"`
	BlockedSince string `json:"blocked_since,omitempty"` // while the head is retrying: since its first failure
}

// NewLane is the view of l.
func NewLane(l queue.Lane) Lane {
	return Lane{Target: l.Target, Key: l.Key, HeadEvent: l.HeadEvent, HeadStatus: l.HeadStatus, Queued: l.Queued,
		LastVersion: l.LastVersion, LastEvent: l.LastEvent, BlockedSince: Time(l.BlockedSince)}
}

// LanePage is how many lanes ListLanes reads at a time.
const LanePage = 1000

// ListLanes calls fn with each lane f selects, in (target, key) order,
// reading a page at a time (f.Limit bounds the total; 0 for all).
func ListLanes(ctx context.Context, s LaneStore, f queue.LaneFilter, fn func(Lane) error) error {
	total := 0
	for {
		page := f
		page.Limit = LanePage
		if f.Limit > 0 {
			page.Limit = min(page.Limit, f.Limit-total)
		}
		list, err := s.Lanes(ctx, page)
		if err != nil {
			return err
		}
		for _, l := range list {
			if err := fn(NewLane(l)); err != nil {
				return err
			}
		}
		total += len(list)
		if len(list) < page.Limit || (f.Limit > 0 && total >= f.Limit) {
			return nil
		}
		last := list[len(list)-1]
		f.After = [2]string{last.Target, last.Key}
	}
}
