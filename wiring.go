package main

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"hookbox/config"
	"hookbox/dedupe"
	"hookbox/queue"
	"hookbox/receiver"
	"hookbox/signature"
)

// ingester joins the receiver to the event store and wakes the workers
// after a commit that queued work.
type ingester struct {
	events *dedupe.Store
	routes *router
	pool   *queue.Pool
}

func (i *ingester) Ingest(ctx context.Context, e *receiver.Event) (receiver.Result, error) {
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
	if (!res.Duplicate && i.routes.any(ev.Source)) || res.Revived > 0 {
		i.pool.Notify()
	}
	return receiver.Result{Duplicate: res.Duplicate, Conflict: res.Conflict}, nil
}

// router finds the targets of an event.
type router struct {
	bySource map[string][]config.Target
}

func newRouter(cfg config.Config) *router {
	r := &router{bySource: map[string][]config.Target{}}
	for _, t := range cfg.Targets {
		for _, s := range t.SourceNames() {
			r.bySource[s] = append(r.bySource[s], t)
		}
	}
	return r
}

func (r *router) any(source string) bool { return len(r.bySource[source]) > 0 }

func (r *router) targets(source, typ string) []string {
	var names []string
	for _, t := range r.bySource[source] {
		if t.Matches(source, typ) {
			names = append(names, t.Name)
		}
	}
	return names
}

// buildSources turns [[source]] into receiver sources with their verifiers.
func buildSources(cfg config.Config) ([]receiver.Source, error) {
	out := make([]receiver.Source, 0, len(cfg.Sources))
	for _, s := range cfg.Sources {
		v, err := signature.New(signature.Options{
			Scheme:    s.Verify,
			Secrets:   s.Secrets,
			Tolerance: s.Tolerance.D(),
			Header:    s.Header,
			Algorithm: s.Algorithm,
			Encoding:  s.Encoding,
			Prefix:    s.Prefix,
		})
		if err != nil {
			return nil, fmt.Errorf("source %s: %w", s.Name, err)
		}
		id, err := receiver.ParseLocation(s.EventID)
		if err != nil {
			return nil, fmt.Errorf("source %s: event_id: %w", s.Name, err)
		}
		var typ receiver.Location
		if s.EventType != "" {
			if typ, err = receiver.ParseLocation(s.EventType); err != nil {
				return nil, fmt.Errorf("source %s: event_type: %w", s.Name, err)
			}
		}
		src := receiver.Source{
			Name:      s.Name,
			Verifier:  v,
			EventID:   id,
			EventType: typ,
			MaxBody:   s.MaxBody.Int(),
			Slack:     s.Verify == "slack",
		}
		switch s.Verify {
		case "gitlab":
			src.Redact = []string{"X-Gitlab-Token"}
		case "token", "hmac":
			// The token, or the signature under a header name of the
			// user's choosing (credentialHeader may not recognise it).
			src.Redact = []string{s.Header}
		}
		out = append(out, src)
	}
	return out, nil
}

// warnUnknownTargets names the targets that queued deliveries are for but
// the config no longer has (renamed or removed since they were queued):
// each goes dead at its next attempt.
func (m *Main) warnUnknownTargets(ctx context.Context) {
	log := m.component("queue")
	queued, err := m.Queue.QueuedByTarget(ctx)
	if err != nil {
		log.Warn().Err(err).Msg("could not count queued deliveries by target")
		return
	}
	for _, name := range slices.Sorted(maps.Keys(queued)) {
		if slices.ContainsFunc(m.Config.Targets, func(t config.Target) bool { return t.Name == name }) {
			continue
		}
		log.Warn().Str("target", name).Int64("deliveries", queued[name]).
			Msg("queued deliveries are for a target the config no longer names: each goes dead at its next attempt; put the target back and run hookbox replay --dead to deliver them")
	}
}
