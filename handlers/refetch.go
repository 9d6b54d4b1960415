package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"hookbox/config"
	"hookbox/location"
	"hookbox/provider"
	"hookbox/queue"
	"hookbox/refetch"
)

// Options is what TargetsWith needs beyond the config, for the targets
// with refetch or refetch_url.
type Options struct {
	// Refetch makes their fetchers: targets of one Set that fetch with one
	// credential share its rate. nil means a Set of their own.
	Refetch *refetch.Set
	// Headers returns a stored event's headers, for a fetch that reads
	// them (Shopify's shop and API version); without it, such a fetch
	// sees none.
	Headers func(ctx context.Context, event int64) (http.Header, error)
	// Replica is the serve replica's name: its commands also have
	// HOOKBOX_REPLICA, so that a later replica stops only the leftovers of
	// the replica that claimed them, never those of a live one.
	Replica string
}

// refetcher is one target's fetch before each attempt.
type refetcher struct {
	f       *refetch.Fetcher
	keys    map[string]location.Location // by source: where its events' order key is
	headers func(ctx context.Context, event int64) (http.Header, error)
}

// newRefetcher builds t's refetcher, nil for a target without refetch.
func newRefetcher(cfg config.Config, t config.Target, o Options) (*refetcher, error) {
	if t.Refetch == "" && t.RefetchURL == "" {
		return nil, nil
	}
	c := refetch.Config{Target: t.Name, Preset: t.Refetch, BaseURL: t.RefetchBaseURL,
		Credential: t.RefetchCredential, Timeout: t.Timeout.D()}
	if t.RefetchURL != "" {
		tmpl, err := refetch.ParseTemplate(t.RefetchURL)
		if err != nil {
			return nil, fmt.Errorf("refetch_url: %w", err)
		}
		c.Template = tmpl
	}
	if t.RefetchRate != "" {
		r, err := refetch.ParseRate(t.RefetchRate)
		if err != nil {
			return nil, fmt.Errorf("refetch_rate: %w", err)
		}
		c.Rate = r
	}
	set := o.Refetch
	if set == nil {
		set = refetch.NewSet()
	}
	f, err := set.Fetcher(c)
	if err != nil {
		return nil, err
	}
	return &refetcher{f: f, keys: orderKeys(cfg, t), headers: o.Headers}, nil
}

// orderKeys are where the events of t's sources carry their order key:
// the source's order_key, else its preset's, for the fetches of one
// resource to run one at a time. A source without one has its fetches of
// one URL so.
func orderKeys(cfg config.Config, t config.Target) map[string]location.Location {
	keys := map[string]location.Location{}
	names := t.SourceNames()
	for _, s := range cfg.Sources {
		if !slices.Contains(names, s.Name) {
			continue
		}
		key := s.OrderKey
		if p, ok := provider.Lookup(s.Verify); ok && key == "" {
			key = p.OrderKey
		}
		if key == "" {
			continue
		}
		if loc, err := location.Parse(key, location.ID); err == nil {
			keys[s.Name] = loc
		}
	}
	return keys
}

// fetch fetches j's resource into d: its body and content type, and
// d.Refetched. When the fetch fails, it returns the attempt's outcome and
// true.
func (r *refetcher) fetch(ctx context.Context, j *queue.Job, d *Delivery) (queue.Outcome, bool) {
	e := refetch.Event{Type: j.Type, Body: j.Body}
	if r.f.NeedsHeaders() && r.headers != nil {
		h, err := r.headers(ctx, j.Event)
		if err != nil {
			err = fmt.Errorf("refetch: the event's headers: %w", err)
			return queue.Outcome{Err: &Error{Msg: err.Error(), Err: err}}, true
		}
		e.Header = h
	}
	if loc, ok := r.keys[j.Source]; ok {
		if k, err := loc.Find(&location.Request{Header: e.Header, Body: j.Body}); err == nil {
			e.Key = k
		}
	}
	res, err := r.f.Fetch(ctx, e)
	if err != nil {
		var fe *refetch.Error
		out := queue.Outcome{Err: err}
		if errors.As(err, &fe) {
			out.RetryAfter, out.Output = fe.RetryAfter, fe.Output
			if fe.Permanent {
				out.Err = queue.Permanent("refetch: nothing to fetch", err)
			}
		}
		return out, true
	}
	if res.Gone {
		d.Refetched = "gone"
		return queue.Outcome{}, false
	}
	d.Body, d.ContentType, d.Refetched = res.Body, res.ContentType, "1"
	if d.ContentType == "" {
		d.ContentType = "application/json"
	}
	return queue.Outcome{}, false
}
