package fire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Prober tells how many times a handler's side effect of an event ran:
// the seam between fire and whatever holds the handler's state (a URL it
// serves, a command that reads its database).
type Prober interface {
	// Count is the number of times the effect of the event with eventID
	// (as the endpoint reads it) ran, and the version the resource with
	// resourceID is at, if the handler keeps one.
	Count(ctx context.Context, eventID, resourceID string) (Count, error)
}

// Count is a probe's answer.
type Count struct {
	N int
	// Version is the resource's version, as the probe reports it; "" for
	// none.
	Version string
}

// ParseCount reads a probe's answer: a count alone ("1"), or a JSON object
// {"count": N, "version": V}, V a number or a string (a Unix time in
// seconds or milliseconds, or an RFC 3339 time).
func ParseCount(text string) (Count, error) {
	text = strings.TrimSpace(text)
	if n, err := strconv.Atoi(text); err == nil {
		if n < 0 {
			return Count{}, fmt.Errorf("a negative count %d", n)
		}
		return Count{N: n}, nil
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var doc struct {
		Count   *json.Number `json:"count"`
		Version any          `json:"version"`
	}
	if err := dec.Decode(&doc); err != nil || doc.Count == nil {
		return Count{}, fmt.Errorf("want a count, or {\"count\": N, \"version\": V}; got %q", clip(text, 80))
	}
	n, err := strconv.Atoi(doc.Count.String())
	if err != nil || n < 0 {
		return Count{}, fmt.Errorf("count %s: want a whole number, 0 or more", doc.Count)
	}
	c := Count{N: n}
	switch v := doc.Version.(type) {
	case nil:
	case json.Number:
		c.Version = v.String()
	case string:
		c.Version = v
	default:
		return Count{}, fmt.Errorf("version: want a number or a string, got %q", clip(text, 80))
	}
	return c, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// URLProbe asks a URL: GET U?event_id=…&resource_id=… answers a count, or
// {"count": N, "version": V} (ParseCount). It follows no redirect: only U
// is contacted.
type URLProbe struct {
	url    string
	client *http.Client
}

// probeTimeout bounds one probe's answer.
const probeTimeout = 10 * time.Second

// NewURLProbe returns a probe of rawURL, which must be absolute http or
// https.
func NewURLProbe(rawURL string) (*URLProbe, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("probe URL %q: want an absolute http or https URL", rawURL)
	}
	return &URLProbe{url: rawURL, client: &http.Client{
		Timeout:       probeTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}, nil
}

// Count asks the URL; an answer other than a 2xx is an error quoting it.
func (p *URLProbe) Count(ctx context.Context, eventID, resourceID string) (Count, error) {
	q := url.Values{"event_id": {eventID}, "resource_id": {resourceID}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, joinQuery(p.url, q), nil)
	if err != nil {
		return Count{}, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return Count{}, fmt.Errorf("probe: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if err != nil {
		return Count{}, fmt.Errorf("probe: read the answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return Count{}, fmt.Errorf("probe: %s answered %d: %q", p.url, resp.StatusCode, clip(string(bytes.TrimSpace(body)), 80))
	}
	c, err := ParseCount(string(body))
	if err != nil {
		return Count{}, fmt.Errorf("probe: %w", err)
	}
	return c, nil
}

// probeEvery is how often a probe is asked while fire waits for effects.
const probeEvery = 100 * time.Millisecond

// counted is what the probe said of a scenario's events: each one's
// effects, over every id it was sent under, and the resource's version.
type counted struct {
	effects []int
	version string
}

// count asks the probe about every event.
func (r *Runner) count(ctx context.Context, events []*event) (counted, error) {
	c := counted{effects: make([]int, len(events))}
	for i, e := range events {
		for _, id := range e.sentAs {
			n, err := r.Probe.Count(ctx, id, e.resource)
			if err != nil {
				return c, err
			}
			c.effects[i] += n.N
			if n.Version != "" {
				c.version = n.Version
			}
		}
	}
	return c, nil
}

// settle is the least time fire keeps watching once the effects it waits
// for have shown, for a second one to come: a second, or a tenth of Wait
// if that is shorter; after an attempt that timed out, at least the
// timeout, as the handler may still be working on it.
func (r *Runner) settle(timedOut bool) time.Duration {
	d := min(time.Second, r.Wait/10)
	if timedOut {
		d = max(d, r.Timeout)
	}
	return d
}

// watch asks the probe until the newest event's effect has shown and fire
// has waited long enough for any later one, or Wait has passed, and
// returns the last answer. Long enough is settle after it showed, and
// after twice the handler's own delay (from the event's first request to
// its effect) past the scenario's last request: a duplicate's effect, or
// the older event's, comes about that delay after its request.
func (r *Runner) watch(ctx context.Context, events []*event, settle time.Duration) (counted, error) {
	deadline := time.Now().Add(r.Wait)
	e := events[newest(events)]
	var last time.Time
	for _, ev := range events {
		if ev.lastSent.After(last) {
			last = ev.lastSent
		}
	}
	for {
		c, err := r.count(ctx, events)
		if err != nil {
			return c, err
		}
		now := time.Now()
		if e.seen.IsZero() && c.effects[newest(events)] > 0 {
			e.seen = now
		}
		if !e.seen.IsZero() {
			delay := e.seen.Sub(e.firstSent)
			if until := later(e.seen, last.Add(2*delay)).Add(settle); !now.Before(until) {
				return c, nil
			}
		}
		if now.After(deadline) {
			return c, nil
		}
		if err := sleep(ctx, probeEvery); err != nil {
			return c, err
		}
	}
}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// pause waits d, asking the probe meanwhile (if there is one) so that the
// time an event's effect first shows is known (watch); its errors are
// left to watch to report.
func (r *Runner) pause(ctx context.Context, d time.Duration, events []*event) error {
	if r.Probe == nil {
		return sleep(ctx, d)
	}
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if c, err := r.count(ctx, events); err == nil {
			for i, n := range c.effects {
				if n > 0 && events[i].seen.IsZero() {
					events[i].seen = time.Now()
				}
			}
		}
		if err := sleep(ctx, min(probeEvery, time.Until(end))); err != nil {
			return err
		}
	}
	return nil
}

// newest is the index of the event with the latest time.
func newest(events []*event) int {
	n := 0
	for i, e := range events {
		if e.at.After(events[n].at) {
			n = i
		}
	}
	return n
}

// errNoEffect is watchFor's error when the effect did not show in time.
var errNoEffect = errors.New("no effect seen")

// watchFor asks the probe until event e's effect shows, for up to Wait.
func (r *Runner) watchFor(ctx context.Context, e *event) error {
	deadline := time.Now().Add(r.Wait)
	for {
		c, err := r.count(ctx, []*event{e})
		if err != nil {
			return err
		}
		if c.effects[0] > 0 {
			e.seen = time.Now()
			return nil
		}
		if time.Now().After(deadline) {
			return errNoEffect
		}
		if err := sleep(ctx, probeEvery); err != nil {
			return err
		}
	}
}

// versionOf says which event's version v is: the index of the event whose
// time it is (Unix seconds or milliseconds, or RFC 3339), -1 for none.
func versionOf(v string, events []*event) int {
	n, nErr := strconv.ParseInt(v, 10, 64)
	t, tErr := time.Parse(time.RFC3339Nano, v)
	for i, e := range events {
		switch {
		case nErr == nil && (n == e.at.Unix() || n == e.at.UnixMilli()):
			return i
		case tErr == nil && t.Equal(e.at):
			return i
		}
	}
	return -1
}
