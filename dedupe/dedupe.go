// Package dedupe holds what hookbox knows of a received event: the event
// itself, as stored exactly once per (source, event id), what storing it
// did (a new event, or a redelivery of one stored), how events are listed,
// and the retention Sweeper with the Store it needs of an engine.
//
// The engine's UNIQUE (source, event id) key decides whether an event is
// new, inside the same transaction that stores it and its deliveries, so
// concurrent copies of one event cannot both pass.
package dedupe

import (
	"errors"
	"net/http"
	"time"
)

// ErrNotFound is returned (wrapped) for an unknown event.
var ErrNotFound = errors.New("event not found")

// Event is one received webhook.
type Event struct {
	ID          int64 // row id, set once stored
	Source      string
	EventID     string // the provider's id: the dedupe key within Source
	Type        string
	ReceivedAt  time.Time
	ContentType string
	Headers     http.Header
	Body        []byte
	// OrderKey is the resource the event is about ("" = none: no lane),
	// OrderVersion its version as found, OrderRank the version's
	// comparable form (package order; "" when missing or unreadable).
	OrderKey, OrderVersion, OrderRank string
	// SecretIndex is which of its source's secrets verified the event,
	// from 0 in the config's order, of SecretCount, how many the source
	// had then; SecretCount is 0 when no secret was checked (an unsigned
	// source, the local sink, an event stored before hookbox kept this).
	SecretIndex, SecretCount int
}

// Result says what storing an event did.
type Result struct {
	ID        int64 // row id of the stored (or earlier) event
	Duplicate bool  // the (source, event id) was already stored
	Conflict  bool  // a duplicate whose body differs from the stored one
	Revived   int64 // dead deliveries put back to pending by this redelivery
}

// Stored is an event as read back, with its bookkeeping.
type Stored struct {
	Event
	Redeliveries int64
	LastSeenAt   time.Time // zero if never redelivered
	Conflicts    int64
	BodySize     int64
	Swept        bool // body and headers were dropped by retention
}

// KeptConflicts is how many of an event's conflicting copies (a
// redelivery with a different body) the engines keep: the latest.
const KeptConflicts = 5

// Conflict is a copy of an event that arrived with its (source, event id)
// but a different body, kept beside the event (the last KeptConflicts of
// them) until retention drops the event's body.
type Conflict struct {
	ID          int64
	ReceivedAt  time.Time
	ContentType string
	Headers     http.Header
	Body        []byte
	BodySize    int64
}

// Filter selects events for a listing, newest first.
type Filter struct {
	Source string
	// Status keeps events with at least one delivery in this status
	// (pending, running, retrying, done, dead, skipped).
	Status string
	Since  time.Time
	Until  time.Time
	Limit  int
	// Before keeps events numbered below it (0: no bound): the next page
	// after an event, newest first.
	Before int64
	// After keeps events numbered above it (0: no bound): those that
	// arrived since an event was listed (a live tail).
	After int64
	// Type keeps events of this type.
	Type string
	// IDContains keeps events whose provider event id holds this text.
	// No index serves it: a listing walks events newest first until it
	// has Limit of them.
	IDContains string
	// Key keeps the events of one order key ("" = any).
	Key string
}
