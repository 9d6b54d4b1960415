// Package inbox joins what the receiver accepts to the store: the event,
// deduped under UNIQUE (source, event id), and a delivery for each target
// it is routed to, in the one transaction that makes the 200 durable; then
// it wakes the workers.
package inbox

import (
	"context"

	"hookbox/config"
	"hookbox/dedupe"
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

// Store is what the inbox needs of a store engine.
type Store interface {
	// IngestEvent stores ev with a pending delivery to each of targets, or
	// counts a redelivery of the stored one and puts its dead deliveries
	// back to pending, in one transaction, and returns once it is
	// durable. An error means nothing was written.
	IngestEvent(ctx context.Context, ev *dedupe.Event, targets []string) (dedupe.Result, error)
}

// Waker is told when a commit queued work (the worker pool).
type Waker interface{ Notify() }

// Ingester is the receiver's Ingester: it stores each event with its
// deliveries, revives the dead deliveries of a redelivered one, and wakes
// the workers after a commit that queued work.
type Ingester struct {
	store  Store
	routes *Router
	wake   Waker
}

// New returns an Ingester storing into s, routing by routes and waking
// wake.
func New(s Store, routes *Router, wake Waker) *Ingester {
	return &Ingester{store: s, routes: routes, wake: wake}
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
		OrderKey:    e.OrderKey, OrderVersion: e.OrderVersion, OrderRank: e.OrderRank,
		SecretIndex: e.Verified.Secret, SecretCount: e.Verified.Of,
	}
	// Routed before the write, outside the store's one writer; a
	// redelivery's targets are not looked at.
	targets := i.routes.Targets(ev.Source, ev.Type)
	res, err := i.store.IngestEvent(ctx, &ev, targets)
	if err != nil {
		return receiver.Result{}, err
	}
	if (!res.Duplicate && len(targets) > 0) || res.Revived > 0 {
		i.wake.Notify()
	}
	return receiver.Result{Duplicate: res.Duplicate, Conflict: res.Conflict}, nil
}
