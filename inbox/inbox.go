// Package inbox joins what the receiver accepts to the store: the event,
// deduped under UNIQUE (source, event id), and a delivery for each target
// it is routed to, in the one transaction that makes the 200 durable; then
// it wakes the workers.
package inbox

import (
	"context"
	"database/sql"
	"time"

	"hookbox/config"
	"hookbox/dedupe"
	"hookbox/queue"
	"hookbox/receiver"
)

// Router finds the targets of an event: those of its source whose events
// patterns match its type.
type Router struct {
	bySource map[string][]config.Target
}

// NewRouter routes by cfg's [[target]] tables.
func NewRouter(targets []config.Target) *Router {
	r := &Router{bySource: map[string][]config.Target{}}
	for _, t := range targets {
		for _, s := range t.SourceNames() {
			r.bySource[s] = append(r.bySource[s], t)
		}
	}
	return r
}

// Any reports whether any target takes events of source.
func (r *Router) Any(source string) bool { return len(r.bySource[source]) > 0 }

// Targets names the targets an event of source and type goes to.
func (r *Router) Targets(source, typ string) []string {
	var names []string
	for _, t := range r.bySource[source] {
		if t.Matches(source, typ) {
			names = append(names, t.Name)
		}
	}
	return names
}

// Waker is told when a commit queued work (the worker pool).
type Waker interface{ Notify() }

// Ingester is the receiver's Ingester: it stores each event with its
// deliveries, revives the dead deliveries of a redelivered one, and wakes
// the workers after a commit that queued work.
type Ingester struct {
	events *dedupe.Store
	routes *Router
	wake   Waker
}

// New returns an Ingester storing into events and q, routing by routes and
// waking wake. It sets events' OnNew and OnDuplicate: a new event's
// deliveries and a redelivery's revival join the event's transaction.
func New(events *dedupe.Store, q *queue.Queue, routes *Router, wake Waker) *Ingester {
	events.OnNew = func(tx *sql.Tx, ev *dedupe.Event) error {
		names := routes.Targets(ev.Source, ev.Type)
		if len(names) == 0 {
			return nil
		}
		return q.EnqueueTx(context.Background(), tx, ev.ID, names, ev.ReceivedAt)
	}
	events.OnDuplicate = func(tx *sql.Tx, id int64, now time.Time) (int64, error) {
		return q.ReviveTx(context.Background(), tx, id, now)
	}
	return &Ingester{events: events, routes: routes, wake: wake}
}

// Ingest stores e. Its error is the store's: the receiver answers 503.
func (i *Ingester) Ingest(ctx context.Context, e *receiver.Event) (receiver.Result, error) {
	ev := dedupe.Event{
		Source:      e.Source,
		EventID:     e.EventID,
		Type:        e.Type,
		ReceivedAt:  e.ReceivedAt,
		ContentType: e.ContentType,
		Headers:     e.Headers,
		Body:        e.Body,
	}
	res, err := i.events.Ingest(ctx, &ev)
	if err != nil {
		return receiver.Result{}, err
	}
	if (!res.Duplicate && i.routes.Any(ev.Source)) || res.Revived > 0 {
		i.wake.Notify()
	}
	return receiver.Result{Duplicate: res.Duplicate, Conflict: res.Conflict}, nil
}
