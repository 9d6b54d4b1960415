// Package refetch fetches the current state of the resource a webhook is
// about from its provider's API, for a target with refetch (a provider
// preset's API, provider.Refetch) or refetch_url (a URL with {json:…}
// placeholders), so that the target acts on what the resource is now
// rather than on a copy that an older, late or repeated webhook carried.
//
// A Set holds what the targets of one serve share: one token bucket per
// credential, so that every target fetching with the same key keeps,
// together, to the provider's limit (and to its 429s), and the counts of
// fetches by outcome. A Fetcher is one target's: it builds the request
// from the stored event, runs one fetch at a time per resource, waits its
// turn in the bucket, and says what came back: the resource, gone (404 or
// 410: the webhook's own body is delivered, marked so), or an *Error.
//
// A Fetcher only ever sends its credential to the base URL its config
// names (the preset's API, refetch_base_url, or refetch_url's host): a
// payload that names another host is refused, never followed, and so is
// a redirect.
package refetch

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hookbox/provider"
)

const (
	// MaxBody bounds a fetched resource: a larger answer fails the attempt.
	MaxBody = 8 << 20
	// errorKeep is how much of a failed answer's body the attempt keeps.
	errorKeep = 2 << 10
	// defaultRetryAfter is the wait after a 429 that names none.
	defaultRetryAfter = time.Second
	// maxRetryAfter caps a provider's Retry-After.
	maxRetryAfter = time.Hour
)

// DefaultRate is refetch_url's when refetch_rate is not set.
var DefaultRate = Rate{N: 10, Per: time.Second}

// ErrNoResource is returned (wrapped) when an event names nothing to
// fetch: no retry can mend it.
var ErrNoResource = provider.ErrNoResource

// Counters count fetches by outcome since the Set was made: OK (the
// resource was delivered), Gone (404 or 410: the webhook's body was
// delivered, marked gone), Failed (an answer or a failure that fails the
// attempt), RateLimited (the provider answered 429, or held the
// credential's bucket shut, or the bucket had no turn within the wait:
// the attempt is retried later).
type Counters struct {
	OK, Gone, Failed, RateLimited atomic.Int64
}

type outcome int

const (
	outcomeOK outcome = iota
	outcomeGone
	outcomeFailed
	outcomeRateLimited
)

// ByOutcome is the counts by outcome name, as the metrics label them:
// ok, gone, failed, rate_limited.
func (c *Counters) ByOutcome() map[string]int64 {
	return map[string]int64{"ok": c.OK.Load(), "gone": c.Gone.Load(), "failed": c.Failed.Load(), "rate_limited": c.RateLimited.Load()}
}

func (c *Counters) add(o outcome) {
	switch o {
	case outcomeOK:
		c.OK.Add(1)
	case outcomeGone:
		c.Gone.Add(1)
	case outcomeFailed:
		c.Failed.Add(1)
	case outcomeRateLimited:
		c.RateLimited.Add(1)
	}
}

// count counts a fetch's outcome for the Set and for the target.
func (f *Fetcher) count(o outcome) {
	f.set.Counters.add(o)
	f.counters.add(o)
}

// Set makes the Fetchers of one serve: those with the same credential
// share a bucket, at the lowest rate any of them asks for.
type Set struct {
	Counters Counters
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu       sync.Mutex
	buckets  map[[32]byte]*bucket
	client   *http.Client
	byTarget map[string]*Counters
}

// ByTarget returns each target's counts (the Set's Counters add them up).
func (s *Set) ByTarget() map[string]*Counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]*Counters, len(s.byTarget))
	for k, v := range s.byTarget {
		out[k] = v
	}
	return out
}

// NewSet returns an empty Set.
func NewSet() *Set {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	return &Set{
		buckets:  map[[32]byte]*bucket{},
		byTarget: map[string]*Counters{},
		client: &http.Client{
			Transport: &http.Transport{
				Proxy:                 http.ProxyFromEnvironment,
				DialContext:           dialer.DialContext,
				ForceAttemptHTTP2:     true,
				MaxIdleConnsPerHost:   32,
				IdleConnTimeout:       90 * time.Second,
				TLSHandshakeTimeout:   10 * time.Second,
				ResponseHeaderTimeout: time.Minute,
			},
			// A fetch goes to the configured base and nowhere else.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

func (s *Set) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Config is one target's refetch.
type Config struct {
	Target string
	// Preset names a provider with a Refetch, or Template is set.
	Preset   string
	Template *Template
	// BaseURL replaces the preset's API base (refetch_base_url).
	BaseURL string
	// Credential is the API key or token ("" only for a Template).
	Credential string
	// Rate is the limit for the credential; zero means the provider's
	// published one (DefaultRate for a Template).
	Rate Rate
	// Timeout bounds one fetch, the wait for its turn included.
	Timeout time.Duration
}

// Fetcher fetches for one target. It is safe for concurrent use.
type Fetcher struct {
	set    *Set
	target string
	api    *provider.Refetch // nil for a template
	tmpl   *Template
	base   string // the configured base; "" for a preset whose event names it (Shopify)
	auth   string // header name
	cred   string
	rate   Rate
	bucket *bucket
	wait   time.Duration
	// counters are the target's, shared with the Set's ByTarget.
	counters *Counters

	mu    sync.Mutex
	lanes map[string]*lane
}

// Fetcher returns the target's Fetcher. Its errors name what is wrong (an
// unknown preset, one without a fetch API, an unusable base URL or rate);
// config validation reports the same with the key.
func (s *Set) Fetcher(c Config) (*Fetcher, error) {
	f := &Fetcher{set: s, target: c.Target, tmpl: c.Template, cred: c.Credential, rate: c.Rate,
		wait: cmp.Or(c.Timeout, 30*time.Second), lanes: map[string]*lane{}}
	switch {
	case c.Template != nil:
		f.base, f.auth = c.Template.Base(), "Authorization"
		if f.rate.N == 0 {
			f.rate = DefaultRate
		}
	default:
		p, ok := provider.Lookup(c.Preset)
		if !ok || p.Refetch == nil {
			return nil, fmt.Errorf("refetch %q: no preset with a fetch API (%s)", c.Preset, strings.Join(Presets(), ", "))
		}
		f.api, f.base, f.auth = p.Refetch, p.Refetch.Base, cmp.Or(p.Refetch.AuthHeader, "Authorization")
		if c.BaseURL != "" {
			base, err := CheckBaseURL(c.BaseURL)
			if err != nil {
				return nil, err
			}
			f.base = base
		}
		if f.rate.N == 0 {
			text := p.Refetch.Rate
			if p.Refetch.RateFor != nil {
				text = p.Refetch.RateFor(c.Credential)
			}
			r, err := ParseRate(text)
			if err != nil {
				return nil, fmt.Errorf("refetch %s: the preset's rate %q: %v", c.Preset, text, err)
			}
			f.rate = r
		}
	}
	// One bucket per credential, whichever targets hold it; a fetch
	// without a credential has a bucket per base.
	key := sha256.Sum256([]byte("credential\x00" + f.cred))
	if f.cred == "" {
		key = sha256.Sum256([]byte("base\x00" + f.base))
	}
	s.mu.Lock()
	f.counters = s.byTarget[c.Target]
	if f.counters == nil {
		f.counters = &Counters{}
		s.byTarget[c.Target] = f.counters
	}
	b := s.buckets[key]
	if b == nil {
		b = &bucket{interval: f.rate.Interval()}
		s.buckets[key] = b
	} else if iv := f.rate.Interval(); iv > b.interval {
		b.mu.Lock()
		b.interval = iv
		b.mu.Unlock()
	}
	s.mu.Unlock()
	f.bucket = b
	return f, nil
}

// Presets names the provider presets with a fetch API.
func Presets() []string {
	var names []string
	for _, p := range provider.All() {
		if p.Refetch != nil {
			names = append(names, p.Name)
		}
	}
	return names
}

// CheckBaseURL checks a refetch_base_url: an absolute http(s) URL with a
// host, no user, query or fragment. It returns it without its trailing
// slash.
func CheckBaseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", fmt.Errorf("not a URL: %v", unwrapURLError(err))
	case u.Scheme != "http" && u.Scheme != "https":
		return "", errors.New("want an absolute http:// or https:// URL")
	case u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return "", errors.New("want an absolute http:// or https:// URL with a host, and no user:password, query or fragment")
	}
	return strings.TrimRight(raw, "/"), nil
}

// Rate is the limit the Fetcher keeps to (shared with every Fetcher of
// its credential, which keeps to the lowest of theirs).
func (f *Fetcher) Rate() Rate { return f.rate }

// NeedsHeaders reports whether building a fetch reads the event's
// headers (Shopify's shop and API version), which the caller then loads.
func (f *Fetcher) NeedsHeaders() bool { return f.api != nil && f.api.Base == "" }

// Event is a stored event as a fetch reads it.
type Event struct {
	Type   string
	Header http.Header // may be nil unless NeedsHeaders
	Body   []byte
	// Key is the event's order key value, "" when it has none: fetches
	// of one key (else of one URL) run one at a time.
	Key string
}

// Result is what a fetch got: Body is the resource, or, with Gone, nil
// (the caller delivers the webhook's own body).
type Result struct {
	Body        []byte
	ContentType string
	Gone        bool
	URL         string // what was fetched, for the attempt's record
	Status      int
}

// Error is a fetch that fails the attempt: Msg says what happened,
// naming the URL and the status (never the credential); RetryAfter > 0
// asks for no retry before it (a 429, the bucket's turn); Permanent means
// no retry can mend it (the event names nothing to fetch).
type Error struct {
	Msg         string
	Status      int
	RetryAfter  time.Duration
	Permanent   bool
	RateLimited bool
	Output      string // the head of the failed answer's body
	Err         error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Fetch fetches e's resource. It returns a Result for a 2xx (the body) or
// a 404 or 410 (Gone), and an *Error for anything else.
func (f *Fetcher) Fetch(ctx context.Context, e Event) (Result, error) {
	u, extra, err := f.request(e)
	if err != nil {
		f.count(outcomeFailed)
		return Result{}, &Error{Msg: "refetch: " + err.Error(), Permanent: errors.Is(err, ErrNoResource), Err: err}
	}
	// The wait for the resource's turn and for the credential's share
	// one budget: the target's timeout.
	budget, start := f.maxWait(ctx), time.Now()
	unlock, err := f.lock(ctx, cmp.Or(e.Key, u), budget)
	switch {
	case errors.Is(err, errBusy):
		// A slow API holds this resource's fetches: come back later
		// rather than hold a worker.
		f.count(outcomeFailed)
		return Result{}, &Error{Msg: "refetch: another fetch of this resource took longer than the target's timeout", RetryAfter: f.wait, Err: err}
	case err != nil:
		return Result{}, &Error{Msg: "refetch: canceled", Err: err}
	}
	defer unlock()

	wait, busy, held := f.bucket.take(f.set.now(), max(budget-time.Since(start), 0))
	if busy > 0 {
		f.count(outcomeRateLimited)
		msg := fmt.Sprintf("refetch: over refetch_rate %s: no turn for %s", f.rate, busy.Round(time.Millisecond))
		if held {
			msg = fmt.Sprintf("refetch: the API asked for no request for %s more (429)", busy.Round(time.Millisecond))
		}
		return Result{}, &Error{Msg: msg, RetryAfter: busy, RateLimited: true}
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return Result{}, &Error{Msg: "refetch: canceled", Err: ctx.Err()}
		}
	}
	return f.get(ctx, u, extra)
}

// maxWait is how long a fetch may wait for its turn: its timeout, or less
// when ctx ends sooner.
func (f *Fetcher) maxWait(ctx context.Context) time.Duration {
	w := f.wait
	if dl, ok := ctx.Deadline(); ok {
		w = min(w, time.Until(dl))
	}
	return max(w, 0)
}

// request builds the URL and the headers of e's fetch.
func (f *Fetcher) request(e Event) (string, map[string]string, error) {
	if f.tmpl != nil {
		u, err := f.tmpl.Fill(e.Header, e.Body)
		return u, nil, err
	}
	r, err := f.api.Request(provider.FetchEvent{Type: e.Type, Header: e.Header, Body: e.Body, Base: f.base})
	if err != nil {
		return "", nil, err
	}
	base := f.base
	if base == "" {
		base = r.Base
	}
	if base == "" {
		return "", nil, fmt.Errorf("no API base for this event: %w", ErrNoResource)
	}
	headers := make(map[string]string, len(f.api.Header)+len(r.Header))
	for k, v := range f.api.Header {
		headers[k] = v
	}
	for k, v := range r.Header {
		headers[k] = v
	}
	return base + r.Path, headers, nil
}

func (f *Fetcher) get(ctx context.Context, u string, extra map[string]string) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, f.wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		f.count(outcomeFailed)
		return Result{}, &Error{Msg: "refetch: build request: " + unwrapURLError(err).Error(), Err: err}
	}
	req.Header.Set("User-Agent", "hookbox")
	req.Header.Set("Accept", "application/json")
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	if f.cred != "" {
		if f.auth == "Authorization" {
			req.Header.Set("Authorization", "Bearer "+f.cred)
		} else {
			req.Header.Set(f.auth, f.cred)
		}
	}
	what := "refetch GET " + u
	resp, err := f.set.client.Do(req)
	if err != nil {
		f.count(outcomeFailed)
		return Result{}, &Error{Msg: what + ": " + f.scrub(requestError(ctx, err)), Err: err}
	}
	defer resp.Body.Close()
	res := Result{URL: u, Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type")}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
		if err != nil {
			f.count(outcomeFailed)
			return Result{}, &Error{Msg: what + ": reading the answer: " + f.scrub(requestError(ctx, err)), Status: resp.StatusCode, Err: err}
		}
		if len(body) > MaxBody {
			f.count(outcomeFailed)
			return Result{}, &Error{Msg: fmt.Sprintf("%s: the answer is over %d MiB", what, MaxBody>>20), Status: resp.StatusCode}
		}
		res.Body = body
		f.count(outcomeOK)
		return res, nil
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		io.Copy(io.Discard, io.LimitReader(resp.Body, errorKeep))
		res.Gone = true
		f.count(outcomeGone)
		return res, nil
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, errorKeep))
	e := &Error{Msg: what + ": status " + strconv.Itoa(resp.StatusCode), Status: resp.StatusCode,
		Output: f.scrub(strings.ToValidUTF8(string(head), "\uFFFD"))}
	if d, limited := rateLimited(resp, f.set.now()); limited {
		f.bucket.holdFor(f.set.now(), d)
		f.count(outcomeRateLimited)
		e.RetryAfter, e.RateLimited = d, true
		e.Msg += fmt.Sprintf(" (rate limited: retry in %s)", d)
		return Result{}, e
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		e.Msg += " (redirects are not followed)"
	}
	f.count(outcomeFailed)
	return Result{}, e
}

// rateLimited reports whether an answer says the credential is over its
// limit, and for how long: a 429 (Retry-After, else a second), or
// GitHub's 403 with x-ratelimit-remaining: 0 (until x-ratelimit-reset).
func rateLimited(resp *http.Response, now time.Time) (time.Duration, bool) {
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
	case resp.StatusCode == http.StatusForbidden && resp.Header.Get("X-Ratelimit-Remaining") == "0":
	default:
		return 0, false
	}
	d := retryAfter(resp.Header.Get("Retry-After"), now)
	if d == 0 {
		if reset, err := strconv.ParseInt(resp.Header.Get("X-Ratelimit-Reset"), 10, 64); err == nil {
			d = time.Unix(reset, 0).Sub(now).Round(time.Second)
		}
	}
	if d <= 0 {
		d = defaultRetryAfter
	}
	return min(d, maxRetryAfter), true
}

// retryAfter reads delay-seconds or an HTTP-date; 0 for none or garbage.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return min(time.Duration(min(secs, int64(maxRetryAfter/time.Second)))*time.Second, maxRetryAfter)
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// requestError is a failed request's short message.
func requestError(ctx context.Context, err error) string {
	var ne net.Error
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return "timeout"
	}
	return unwrapURLError(err).Error()
}

// scrub removes the credential from text an API or the network sent back,
// which the attempt stores and shows.
func (f *Fetcher) scrub(s string) string {
	if f.cred == "" {
		return s
	}
	return strings.ReplaceAll(s, f.cred, "[credential]")
}

// lane is one resource's turn: fetches of one key run one at a time.
type lane struct {
	turn chan struct{}
	refs int
}

// errBusy: a resource's turn did not come within the wait.
var errBusy = errors.New("resource busy")

// lock waits up to wait for key's turn; unlock gives it to the next.
func (f *Fetcher) lock(ctx context.Context, key string, wait time.Duration) (func(), error) {
	f.mu.Lock()
	l := f.lanes[key]
	if l == nil {
		l = &lane{turn: make(chan struct{}, 1)}
		f.lanes[key] = l
	}
	l.refs++
	f.mu.Unlock()
	release := func() {
		f.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(f.lanes, key)
		}
		f.mu.Unlock()
	}
	select {
	case l.turn <- struct{}{}:
		return func() { <-l.turn; release() }, nil
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case l.turn <- struct{}{}:
		return func() { <-l.turn; release() }, nil
	case <-t.C:
		release()
		return nil, errBusy
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
