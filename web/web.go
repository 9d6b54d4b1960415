// Package web is hookbox's operator face: the JSON API under /api/ and
// the web UI at /, one http.Handler over the store. It reads events,
// deliveries, attempts and dead letters through view, the rendering the
// CLI prints too, and replays through package replay, the rules of
// `hookbox replay`. The pages are html/template with embedded assets and
// a little JavaScript served from the handler itself: no build step, no
// outside host, a strict Content-Security-Policy. The read pages work
// without JavaScript; the live tail, the keyboard and the actions use it.
//
// The handler does not check who asks: whoever mounts it (the admin
// listener, the local sink's listener) does.
package web

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"hookbox/config"
	"hookbox/dedupe"
	"hookbox/provider"
	"hookbox/queue"
	"hookbox/replay"
	"hookbox/view"
)

// Store is what the handler needs of a store engine; sqlite.DB and
// postgres.DB have it.
type Store interface {
	view.Store
	replay.Store
	ListEvents(ctx context.Context, f dedupe.Filter) ([]dedupe.Stored, error)
	DeadLetters(ctx context.Context, all bool, limit int) ([]queue.DeadLetter, error)
	Pauser
	view.LaneStore
}

// Options configures a Handler.
type Options struct {
	// Targets are the config's targets: replays are checked against them
	// as `hookbox replay` checks its --target, and the dead-letter page
	// names them.
	Targets []config.Target
	// Sources are the config's sources' signature settings, by source
	// name, secrets resolved: Copy as curl signs the request afresh with
	// the first secret where the scheme has a signer. A source without
	// one gets the stored headers and a warning.
	Sources map[string]provider.Options
	// Sink says the handler serves the local sink, whose sources are any
	// name, unsigned.
	Sink bool
	// Health gives GET /api/health and the health page; nil answers them
	// 500.
	Health HealthReader
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger gets the errors the handler answers 500 for.
	Logger zerolog.Logger
	// TailEvery is how often the live tail looks for new events in the
	// store (default 1 s): a poll, so it sees what any replica stored.
	TailEvery time.Duration
	// Window is how many rows the live list keeps (default 500): at
	// 1,000 events/s the page drops the oldest rows rather than grow.
	Window int
	// AnyHost accepts a request for any Host. Without it only a loopback
	// name or an IP address is served: a page elsewhere whose name is
	// made to resolve to 127.0.0.1 (DNS rebinding) cannot read a loopback
	// listener that checks no token. Set it where a token is required,
	// behind a proxy that forwards its own name.
	AnyHost bool
}

// Handler serves the API and the UI.
type Handler struct {
	store Store
	opt   Options
	mux   *http.ServeMux
	pages map[string]*template.Template
	done  chan struct{} // closed by Shutdown: the live tails end
	once  sync.Once
}

// Shutdown ends every live tail stream, which would otherwise hold a
// graceful http.Server.Shutdown until its deadline: register it with
// the server's RegisterOnShutdown. The handler goes on serving the rest.
func (h *Handler) Shutdown() { h.once.Do(func() { close(h.done) }) }

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// csp allows nothing but the handler's own script, styles and API: no
// inline script or style, no outside host, no framing, forms posting
// only here.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// New returns the handler of s. It panics if its embedded templates do
// not parse (a programmer's error, caught by every test).
func New(s Store, o Options) *Handler {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.TailEvery <= 0 {
		o.TailEvery = time.Second
	}
	if o.Window <= 0 {
		o.Window = 500
	}
	h := &Handler{store: s, opt: o, mux: http.NewServeMux(), pages: parsePages(), done: make(chan struct{})}
	h.mux.HandleFunc("GET /api/events", h.apiEvents)
	h.mux.HandleFunc("GET /api/events/{id}", h.apiEvent)
	h.mux.HandleFunc("GET /api/events/{id}/body", h.rawBody)
	h.mux.HandleFunc("GET /api/events/{id}/curl", h.apiCurl)
	h.mux.HandleFunc("GET /api/dead", h.apiDead)
	h.mux.HandleFunc("POST /api/replay", h.apiReplay)
	h.mux.HandleFunc("GET /api/tail", h.tail)
	h.mux.HandleFunc("GET /api/targets", h.apiTargets)
	h.mux.HandleFunc("GET /api/health", h.apiHealth)
	h.mux.HandleFunc("GET /api/lanes", h.apiLanes)
	h.mux.HandleFunc("POST /api/targets/{name}/pause", h.apiPause(true))
	h.mux.HandleFunc("POST /api/targets/{name}/resume", h.apiPause(false))
	h.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "", "no such API path: "+r.URL.Path)
	})
	h.mux.HandleFunc("GET /{$}", h.listPage)
	h.mux.HandleFunc("GET /events/{id}", h.detailPage)
	h.mux.HandleFunc("GET /events/{id}/curl", h.curlPage)
	h.mux.HandleFunc("GET /dead", h.deadPage)
	h.mux.HandleFunc("GET /health", h.healthPage)
	assets, _ := fs.Sub(assetFS, "assets")
	h.mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(assets)))
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cache-Control", "no-store")
	if !h.opt.AnyHost && !localHost(r.Host) {
		writeError(w, http.StatusMisdirectedRequest, "", "refused: Host "+strconv.Quote(r.Host)+
			" is neither an IP address nor localhost (open this UI by address, or set the admin token to serve any name)")
		return
	}
	h.mux.ServeHTTP(w, r)
}

// localHost reports whether host (a Host header) is an IP address or a
// loopback name: names no page elsewhere can make its own.
func localHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	host = strings.ToLower(host)
	return host == "localhost" || strings.HasSuffix(host, ".localhost")
}

// apiError is every error the API answers: a message, and the request's
// field it is about where there is one.
type apiError struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

func writeError(w http.ResponseWriter, status int, field, msg string) {
	writeJSON(w, status, apiError{Error: msg, Field: field})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true) // a body shown by a careless client still cannot inject markup
	enc.Encode(v)
}

// fail answers err: a field's mistake 400, an unknown event 404, anything
// else 500 with the detail in the log only.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var fe *replay.FieldError
	switch {
	case errors.As(err, &fe):
		writeError(w, http.StatusBadRequest, fe.Field, fe.Error())
	case errors.Is(err, dedupe.ErrNotFound):
		writeError(w, http.StatusNotFound, "", err.Error())
	case errors.Is(err, context.Canceled):
	default:
		h.opt.Logger.Error().Err(err).Str("path", r.URL.Path).Msg("admin request failed")
		writeError(w, http.StatusInternalServerError, "", "internal error (the log has the detail)")
	}
}

// eventID is the {id} of the path: an event's number.
func eventID(r *http.Request) (int64, error) {
	s := r.PathValue("id")
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, &replay.FieldError{Field: "id", Msg: strconv.Quote(s) + " is not an event number"}
	}
	return id, nil
}

// Query is a listing of events as the API and the list page take it
// from a URL's query.
type Query struct {
	Source, Type, Status, Key, Text string
	Since, Until                    string // as given: RFC 3339, or a duration ago
	Cursor                          string // the next of the page before: list below this event
	Limit                           int
	filter                          dedupe.Filter
}

// Statuses are the delivery statuses the status filter takes.
var Statuses = []string{queue.Pending, queue.Running, queue.Retrying, queue.Paused, queue.Done, queue.Dead, queue.Skipped}

// MaxLimit bounds a page.
const MaxLimit = 500

// ParseQuery reads a listing from v at now; its error is a
// *replay.FieldError naming the parameter.
func ParseQuery(v url.Values, now time.Time) (Query, error) {
	q := Query{Source: v.Get("source"), Type: v.Get("type"), Status: v.Get("status"), Key: v.Get("key"), Text: v.Get("q"),
		Since: v.Get("since"), Until: v.Get("until"), Cursor: v.Get("cursor"), Limit: 50}
	bad := func(field, msg string) (Query, error) { return q, &replay.FieldError{Field: field, Msg: msg} }
	f := dedupe.Filter{Source: q.Source, Type: q.Type, IDContains: q.Text}
	if q.Status != "" {
		ok := false
		for _, s := range Statuses {
			ok = ok || s == q.Status
		}
		if !ok {
			return bad("status", strconv.Quote(q.Status)+": want pending, running, retrying, paused, done, dead or skipped")
		}
		f.Status = q.Status
	}
	f.Key = q.Key
	var err error
	if f.Since, err = replay.ParseWhen(q.Since, now); err != nil {
		return bad("since", err.Error())
	}
	if f.Until, err = replay.ParseWhen(q.Until, now); err != nil {
		return bad("until", err.Error())
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return bad("until", "must be later than since")
	}
	if q.Cursor != "" {
		if f.Before, err = strconv.ParseInt(q.Cursor, 10, 64); err != nil || f.Before <= 0 {
			return bad("cursor", strconv.Quote(q.Cursor)+" is not a cursor (the next of an earlier page)")
		}
	}
	if s := v.Get("limit"); s != "" {
		if q.Limit, err = strconv.Atoi(s); err != nil || q.Limit < 1 || q.Limit > MaxLimit {
			return bad("limit", strconv.Quote(s)+": want a number from 1 to "+strconv.Itoa(MaxLimit))
		}
	}
	q.filter = f
	return q, nil
}

// Values is q as a URL query, without the cursor and the default limit:
// the filters a link keeps.
func (q Query) Values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"source": q.Source, "type": q.Type, "status": q.Status, "key": q.Key, "q": q.Text, "since": q.Since, "until": q.Until} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Limit != 50 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// Page is one page of a listing.
type Page struct {
	Events []view.Event `json:"events"`
	// Next is the cursor of the following page, "" on the last.
	Next string `json:"next"`
}

// list reads the page q asks for: one event more than the limit says
// whether there is a next page.
func (h *Handler) list(ctx context.Context, q Query) (Page, error) {
	f := q.filter
	f.Limit = q.Limit + 1
	events, err := h.store.ListEvents(ctx, f)
	if err != nil {
		return Page{}, err
	}
	p := Page{Events: []view.Event{}}
	if len(events) > q.Limit {
		events = events[:q.Limit]
		p.Next = strconv.FormatInt(events[len(events)-1].ID, 10)
	}
	p.Events, err = h.views(ctx, events)
	return p, err
}

// views is events with their deliveries.
func (h *Handler) views(ctx context.Context, events []dedupe.Stored) ([]view.Event, error) {
	out := make([]view.Event, 0, len(events))
	if len(events) == 0 {
		return out, nil
	}
	ids := make([]int64, len(events))
	for i, e := range events {
		ids[i] = e.ID
	}
	ds, err := h.store.Deliveries(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, e := range events {
		out = append(out, view.NewEvent(e, ds[e.ID]))
	}
	return out, nil
}
