package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"hookbox/dedupe"
	"hookbox/provider"
	"hookbox/replay"
	"hookbox/view"
)

// parsePages parses each page with the layout.
func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{
		"statusClass": func(s string) string { return "st-" + s },
		// rfc writes a time.Time (or a *time.Time, nil for none) as the
		// pages show times: RFC 3339, UTC ("" for none).
		"rfc": func(v any) string {
			switch t := v.(type) {
			case time.Time:
				return view.Time(t)
			case *time.Time:
				if t != nil {
					return view.Time(*t)
				}
			}
			return ""
		},
		"dict": func(kv ...any) map[string]any {
			m := map[string]any{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		},
	}
	base := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html"))
	pages := map[string]*template.Template{}
	for _, name := range []string{"list", "detail", "dead", "health", "curl", "error"} {
		t := template.Must(base.Clone())
		pages[name] = template.Must(t.ParseFS(templateFS, "templates/"+name+".html"))
	}
	return pages
}

// page is what every page's layout reads.
type page struct {
	Title  string
	Nav    string // the menu entry to mark
	Window int
	Data   any
}

// render writes page name with status; a template failing on data is a
// programmer's error, logged and answered 500 before anything is sent.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	p.Window = h.opt.Window
	var buf bytes.Buffer
	if err := h.pages[name].Execute(&buf, p); err != nil {
		h.opt.Logger.Error().Err(err).Str("page", name).Msg("render page")
		http.Error(w, "internal error (the log has the detail)", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// failPage answers err as a page: a field's mistake 400, an unknown
// event 404, anything else 500 with the detail in the log only.
func (h *Handler) failPage(w http.ResponseWriter, r *http.Request, err error) {
	var fe *replay.FieldError
	status, msg := http.StatusInternalServerError, "internal error (the log has the detail)"
	switch {
	case errors.As(err, &fe):
		status, msg = http.StatusBadRequest, fe.Error()
	case errors.Is(err, dedupe.ErrNotFound):
		status, msg = http.StatusNotFound, err.Error()
	case errors.Is(err, context.Canceled):
		return
	default:
		h.opt.Logger.Error().Err(err).Str("path", r.URL.Path).Msg("admin page failed")
	}
	h.render(w, r, status, "error", page{Title: http.StatusText(status), Data: msg})
}

type listData struct {
	Query    Query
	Page     Page
	Statuses []string
	Error    string // a filter's mistake
	Field    string
	Tail     string // the live tail's URL, "" when the page is not the newest
	Newest   int64  // the newest event shown, where the tail starts
	Newer    string // link to the first page, when on a later one
	Older    string // link to the next page
}

// GET /: the event list.
func (h *Handler) listPage(w http.ResponseWriter, r *http.Request) {
	d := listData{Statuses: Statuses, Page: Page{Events: []view.Event{}}}
	q, err := ParseQuery(r.URL.Query(), h.opt.Now())
	d.Query = q
	var fe *replay.FieldError
	if errors.As(err, &fe) {
		d.Error, d.Field = fe.Error(), fe.Field
		h.render(w, r, http.StatusBadRequest, "list", page{Title: "Events", Nav: "events", Data: d})
		return
	}
	if d.Page, err = h.list(r.Context(), q); err != nil {
		h.failPage(w, r, err)
		return
	}
	v := q.Values()
	if q.Cursor == "" {
		tail := q.Values()
		tail.Del("limit")
		if len(d.Page.Events) > 0 {
			d.Newest = d.Page.Events[0].ID
		} else if latest, err := h.store.ListEvents(r.Context(), dedupe.Filter{Limit: 1}); err == nil && len(latest) > 0 {
			// Nothing matches yet: the tail starts after the newest of all.
			d.Newest = latest[0].ID
		}
		tail.Set("after", strconv.FormatInt(d.Newest, 10))
		d.Tail = "/api/tail?" + tail.Encode()
	} else {
		d.Newer = "/?" + v.Encode()
	}
	if d.Page.Next != "" {
		v.Set("cursor", d.Page.Next)
		d.Older = "/?" + v.Encode()
	}
	h.render(w, r, http.StatusOK, "list", page{Title: "Events", Nav: "events", Data: d})
}

type headerRow struct {
	Name, Value string
	Redacted    bool
}

type detailData struct {
	view.Detail
	Headers []headerRow
	Body    Body
	// Previous is the event the diff is against, nil if none.
	Previous *view.Event
	Diff     []DiffLine
	DiffErr  string
	HasDead  bool
	// Signature says how the source verifies what it stores: its scheme,
	// and the signature headers (never stored); "" for an unsigned source
	// or one the config no longer has.
	Signature  string
	Rotation   int  // the source's secrets: more than one is a rotation
	Unverified bool // the source checks nothing (verify = "none")
	// Copies are the kept copies that came with another body, each with
	// its diff against the body kept.
	Copies []conflictData
}

type conflictData struct {
	view.Conflict
	Body    Body
	Index   int  // its place among the copies, oldest first
	Diffed  bool // the one copy diffed on this view
	Diff    []DiffLine
	DiffErr string
}

// GET /events/{id}: one event in full.
func (h *Handler) detailPage(w http.ResponseWriter, r *http.Request) {
	id, err := eventID(r)
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	d, err := view.LoadDetail(r.Context(), h.store, id)
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	data := detailData{Detail: d, Body: NewBody(d.Body, d.Swept)}
	if h.opt.Sink {
		data.Unverified = true
	} else if o, ok := h.opt.Sources[d.Source]; ok {
		if p, ok := provider.Lookup(o.Scheme); ok && p.Unsigned {
			data.Unverified = true
		} else if ok {
			data.Signature, data.Rotation = p.Name, len(o.Secrets)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(d.Headers)) {
		for _, v := range d.Headers[k] {
			data.Headers = append(data.Headers, headerRow{Name: k, Value: v, Redacted: v == redactedValue})
		}
	}
	for _, dl := range d.Deliveries {
		data.HasDead = data.HasDead || dl.Status == "dead"
	}
	// One copy is diffed against the kept body, the newest unless
	// ?conflict=N picks another: a diff of long bodies is costly, and five
	// of them a view would be five times that for whoever can post copies.
	pick := len(d.ConflictCopies) - 1
	if n, err := strconv.Atoi(r.URL.Query().Get("conflict")); err == nil && n >= 0 && n < len(d.ConflictCopies) {
		pick = n
	}
	for i, c := range d.ConflictCopies {
		cd := conflictData{Conflict: c, Body: NewBody(c.Body, false), Index: i}
		if i == pick {
			cd.Diffed = true
			if cd.Diff, err = Diff(data.Body, cd.Body); err != nil {
				cd.DiffErr = err.Error()
			}
		}
		data.Copies = append(data.Copies, cd)
	}
	if err := h.diff(r, &data); err != nil {
		h.failPage(w, r, err)
		return
	}
	title := fmt.Sprintf("Event %d", d.ID)
	h.render(w, r, http.StatusOK, "detail", page{Title: title, Nav: "events", Data: data})
}

// diff compares the event with the one before it: ?against=N, else the
// previous event of the same resource (its source and order key) where it
// has a key, else the previous one of the same source and type.
func (h *Handler) diff(r *http.Request, d *detailData) error {
	var prev int64
	if s := r.URL.Query().Get("against"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return &replay.FieldError{Field: "against", Msg: strconv.Quote(s) + " is not an event number"}
		}
		prev = n
	} else {
		f := dedupe.Filter{Source: d.Source, Type: d.Type, Before: d.ID, Limit: 1}
		if d.OrderKey != "" {
			f.Type, f.Key = "", d.OrderKey
		}
		list, err := h.store.ListEvents(r.Context(), f)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			return nil
		}
		prev = list[0].ID
	}
	p, err := view.LoadDetail(r.Context(), h.store, prev)
	if errors.Is(err, dedupe.ErrNotFound) {
		d.DiffErr = err.Error()
		d.Previous = &view.Event{ID: prev}
		return nil
	}
	if err != nil {
		return err
	}
	d.Previous = &p.Event
	d.Diff, err = Diff(NewBody(p.Body, p.Swept), d.Body)
	if err != nil {
		d.DiffErr = err.Error()
	}
	return nil
}

type curlData struct {
	ID   int64
	URL  string
	Curl Curl
}

// GET /events/{id}/curl?url=U: Copy as curl, for a page without
// JavaScript too.
func (h *Handler) curlPage(w http.ResponseWriter, r *http.Request) {
	id, err := eventID(r)
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	u := r.URL.Query().Get("url")
	c, err := h.curl(r, id, u)
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "curl", page{Title: fmt.Sprintf("Event %d as curl", id), Nav: "events", Data: curlData{ID: id, URL: u, Curl: c}})
}

type deadData struct {
	Dead    []view.Dead
	All     bool
	Targets []string
}

// GET /dead: the dead letters.
func (h *Handler) deadPage(w http.ResponseWriter, r *http.Request) {
	all, limit, err := deadQuery(r)
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	list, err := h.store.DeadLetters(r.Context(), all, limit)
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	d := deadData{All: all, Dead: make([]view.Dead, 0, len(list))}
	for _, l := range list {
		d.Dead = append(d.Dead, view.NewDead(l))
	}
	for _, t := range h.opt.Targets {
		d.Targets = append(d.Targets, t.Name)
	}
	h.render(w, r, http.StatusOK, "dead", page{Title: "Dead letters", Nav: "dead", Data: d})
}
