package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"hookbox/queue"
	"hookbox/replay"
	"hookbox/view"
)

// GET /api/events: a page of events, newest first, and the next cursor.
func (h *Handler) apiEvents(w http.ResponseWriter, r *http.Request) {
	q, err := ParseQuery(r.URL.Query(), h.opt.Now())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p, err := h.list(r.Context(), q)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// Detail is one event as the API gives it: `hookbox event --json`'s
// object with the body as stored, as text where it is UTF-8 (Body), else
// in base64 (BodyBase64).
type Detail struct {
	view.Detail
	Body       *string `json:"body,omitempty"`
	BodyBase64 string  `json:"body_base64,omitempty"`
	// ConflictCopies are the view's, each with its body as Body is.
	ConflictCopies []Conflict `json:"conflict_copies,omitempty"`
}

// Conflict is a kept copy of an event that came with another body, with
// that body.
type Conflict struct {
	view.Conflict
	Body       *string `json:"body,omitempty"`
	BodyBase64 string  `json:"body_base64,omitempty"`
}

// NewDetail is d with its body.
func NewDetail(d view.Detail) Detail {
	out := Detail{Detail: d}
	out.Body, out.BodyBase64 = jsonBody(d.Body)
	for _, c := range d.ConflictCopies {
		jc := Conflict{Conflict: c}
		jc.Body, jc.BodyBase64 = jsonBody(c.Body)
		out.ConflictCopies = append(out.ConflictCopies, jc)
	}
	return out
}

// jsonBody is a body as text where it is UTF-8, else in base64; neither
// for none (swept).
func jsonBody(b []byte) (*string, string) {
	switch {
	case b == nil:
		return nil, ""
	case utf8.Valid(b):
		s := string(b)
		return &s, ""
	default:
		return nil, base64Std(b)
	}
}

// GET /api/events/{id}: one event with headers, body, deliveries and
// every attempt.
func (h *Handler) apiEvent(w http.ResponseWriter, r *http.Request) {
	id, err := eventID(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d, err := view.LoadDetail(r.Context(), h.store, id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, NewDetail(d))
}

// GET /api/events/{id}/body: the raw body bytes, as a download: never
// rendered by the browser, whatever they hold.
func (h *Handler) rawBody(w http.ResponseWriter, r *http.Request) {
	id, err := eventID(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	e, err := h.store.GetEvent(r.Context(), id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if e.Swept {
		writeError(w, http.StatusGone, "", fmt.Sprintf("event %d: the body was removed by retention", id))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": fmt.Sprintf("event-%d.body", id)}))
	w.Header().Set("Content-Length", strconv.Itoa(len(e.Body)))
	w.Write(e.Body)
}

// GET /api/events/{id}/curl?url=U: a curl command that sends the stored
// request to U.
func (h *Handler) apiCurl(w http.ResponseWriter, r *http.Request) {
	id, err := eventID(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	c, err := h.curl(r, id, r.URL.Query().Get("url"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// GET /api/dead: the dead letters not revived (all=1: every one).
func (h *Handler) apiDead(w http.ResponseWriter, r *http.Request) {
	all, limit, err := deadQuery(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	list, err := h.store.DeadLetters(r.Context(), all, limit)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := make([]view.Dead, 0, len(list))
	for _, d := range list {
		out = append(out, view.NewDead(d))
	}
	writeJSON(w, http.StatusOK, struct {
		Dead []view.Dead `json:"dead"`
	}{out})
}

func deadQuery(r *http.Request) (all bool, limit int, err error) {
	v := r.URL.Query()
	switch v.Get("all") {
	case "", "0", "false":
	case "1", "true":
		all = true
	default:
		return false, 0, &replay.FieldError{Field: "all", Msg: strconv.Quote(v.Get("all")) + ": want 1 or 0"}
	}
	limit = 1000
	if s := v.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 {
			return false, 0, &replay.FieldError{Field: "limit", Msg: strconv.Quote(s) + ": want a number above 0"}
		}
	}
	return all, limit, nil
}

// ReplayRequest is the body of POST /api/replay: the fields of `hookbox
// replay`.
type ReplayRequest struct {
	Event  int64  `json:"event"`
	Dead   bool   `json:"dead"`
	Since  string `json:"since"`
	Until  string `json:"until"`
	Target string `json:"target"`
}

// ReplayResult is what POST /api/replay did: the counts, and the
// sentences `hookbox replay` prints.
type ReplayResult struct {
	Queued        int64    `json:"queued"`
	Swept         int64    `json:"swept"`
	Running       int64    `json:"running"`
	Changed       int64    `json:"changed"`
	Backfilled    int64    `json:"backfilled"`
	BackfillSwept int64    `json:"backfill_swept"`
	Messages      []string `json:"messages"`
}

// maxReplayBody bounds the request body of a replay.
const maxReplayBody = 64 << 10

// POST /api/replay: as `hookbox replay`.
func (h *Handler) apiReplay(w http.ResponseWriter, r *http.Request) {
	if msg := crossSite(r); msg != "" {
		writeError(w, http.StatusForbidden, "", msg)
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		// Also what keeps a page elsewhere from posting a form here: a
		// cross-site request with this type needs a preflight we never grant.
		writeError(w, http.StatusUnsupportedMediaType, "", "send the replay as JSON (Content-Type: application/json)")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReplayBody+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "", "read the request: "+err.Error())
		return
	}
	if len(body) > maxReplayBody {
		writeError(w, http.StatusRequestEntityTooLarge, "", "the request is over 64 KiB")
		return
	}
	var req ReplayRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		field, msg := jsonField(err)
		writeError(w, http.StatusBadRequest, field, msg)
		return
	}
	res, err := h.replay(r, req)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// replay is the one replay of the API and the pages' actions.
func (h *Handler) replay(r *http.Request, req ReplayRequest) (ReplayResult, error) {
	now := h.opt.Now()
	sel, err := replay.Parse(replay.Request{Event: req.Event, Dead: req.Dead, Since: req.Since, Until: req.Until, Target: req.Target}, h.opt.Targets, now)
	if err != nil {
		return ReplayResult{}, err
	}
	res, err := replay.Run(r.Context(), h.store, sel, h.opt.Targets, now)
	if err != nil {
		return ReplayResult{}, err
	}
	if res.Queued > 0 || res.Backfilled.Queued > 0 {
		h.wake(r.Context())
	}
	h.opt.Logger.Info().Int64("event", req.Event).Bool("dead", req.Dead).Str("since", req.Since).Str("until", req.Until).
		Str("target", req.Target).Int64("queued", res.Queued).Msg("replay from the admin API")
	return ReplayResult{Queued: res.Queued, Swept: res.Swept, Running: res.Running, Changed: res.Changed,
		Backfilled: res.Backfilled.Queued, BackfillSwept: res.Backfilled.Swept, Messages: res.Lines()}, nil
}

// jsonField names the field a decoding error is about, with a message.
func jsonField(err error) (field, msg string) {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		return te.Field, fmt.Sprintf("%s: want a %s, got a JSON %s", te.Field, te.Type.Kind(), te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f, _ := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		return f, fmt.Sprintf("%s: unknown field (want event, dead, since, until, target)", f)
	case err == io.EOF:
		return "", "empty request: send a JSON object with event, dead, since, until or target"
	}
	return "", "not a JSON object: " + err.Error()
}

// crossSite says why a state-changing request from another site's page
// is refused ("" if it is not one). Browsers say where a request comes
// from; a script or curl sends neither header and is not refused.
func crossSite(r *http.Request) string {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" && s != "none" {
		return "refused: a request from another site (Sec-Fetch-Site: " + s + ")"
	}
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		if !strings.EqualFold(strings.TrimPrefix(strings.TrimPrefix(o, "http://"), "https://"), r.Host) {
			return "refused: a request from another origin (" + o + ")"
		}
	}
	return ""
}

// GET /api/tail: Server-Sent Events, one "event" message for each event
// stored after ?after (or the Last-Event-ID a reconnecting browser sends)
// that the listing's filters keep, oldest first; and the same message
// again, without an id, when the deliveries of one it sent change, until
// they are finished. The store is polled: what another replica stored
// shows up too.
func (h *Handler) tail(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	v.Del("cursor")
	q, err := ParseQuery(v, h.opt.Now())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	after := v.Get("after")
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		after = id
	}
	f := q.filter
	if after != "" {
		if f.After, err = strconv.ParseInt(after, 10, 64); err != nil || f.After < 0 {
			writeError(w, http.StatusBadRequest, "after", "after: "+strconv.Quote(after)+" is not an event number")
			return
		}
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// A stream outlives the listener's write timeout: each write moves it.
	extend := func() { rc.SetWriteDeadline(time.Now().Add(time.Minute)) }
	extend()
	fmt.Fprintf(w, "retry: 2000\n\n")
	rc.Flush()
	ticker := time.NewTicker(h.opt.TailEvery)
	defer ticker.Stop()
	// The events sent whose deliveries may still change, with what was
	// sent of them; at most a window's worth, the newest.
	open := map[int64]string{}
	quiet := time.Now()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.done:
			return
		case <-ticker.C:
		}
		// Newest first, a window at most: when more came since the last
		// poll, the page only ever shows the newest window anyway.
		f.Limit = h.opt.Window
		events, err := h.store.ListEvents(r.Context(), f)
		var views, changed []view.Event
		if err == nil {
			views, err = h.views(r.Context(), events)
		}
		if err == nil {
			changed, err = h.changed(r.Context(), open)
		}
		if err != nil {
			// The stream has begun: no answer but its end, and the
			// browser reconnects from the last event it has.
			if r.Context().Err() == nil {
				h.opt.Logger.Error().Err(err).Msg("live tail: read the store")
			}
			return
		}
		extend()
		for _, ev := range changed {
			b, _ := json.Marshal(ev)
			fmt.Fprintf(w, "event: event\ndata: %s\n\n", b)
		}
		// Sent oldest first, so each id the browser remembers is the
		// highest it has.
		for i := len(views) - 1; i >= 0; i-- {
			b, _ := json.Marshal(views[i])
			fmt.Fprintf(w, "id: %d\nevent: event\ndata: %s\n\n", views[i].ID, b)
			if !finished(views[i]) {
				open[views[i].ID] = string(b)
			}
		}
		if len(views) > 0 {
			f.After = views[0].ID
		}
		for len(open) > h.opt.Window {
			delete(open, minKey(open))
		}
		if len(views) > 0 || len(changed) > 0 {
			quiet = time.Now()
		} else if time.Since(quiet) >= 15*time.Second {
			fmt.Fprintf(w, ": keep-alive\n\n") // through proxies that close idle streams
			quiet = time.Now()
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// changed reads the deliveries of the open events again and returns
// those that changed since sent, updating open (a finished one leaves).
func (h *Handler) changed(ctx context.Context, open map[int64]string) ([]view.Event, error) {
	if len(open) == 0 {
		return nil, nil
	}
	ids := make([]int64, 0, len(open))
	for id := range open {
		ids = append(ids, id)
	}
	ds, err := h.store.Deliveries(ctx, ids)
	if err != nil {
		return nil, err
	}
	var out []view.Event
	for _, id := range ids {
		var was view.Event
		if err := json.Unmarshal([]byte(open[id]), &was); err != nil {
			return nil, err
		}
		was.Deliveries = view.Deliveries(ds[id])
		b, _ := json.Marshal(was)
		if string(b) == open[id] {
			continue
		}
		out = append(out, was)
		if finished(was) {
			delete(open, id)
		} else {
			open[id] = string(b)
		}
	}
	return out, nil
}

// finished is true of an event whose deliveries change no more by
// themselves (a replay or a redelivery may still change them).
func finished(e view.Event) bool {
	for _, d := range e.Deliveries {
		switch d.Status {
		case queue.Done, queue.Dead, queue.Skipped:
		default:
			return false
		}
	}
	return true
}

func minKey(m map[int64]string) int64 {
	first := true
	var k int64
	for id := range m {
		if first || id < k {
			k, first = id, false
		}
	}
	return k
}

// wake tells the serve replicas of a PostgreSQL store that work is queued,
// so that they run it now rather than at their next look; a failure only
// delays it.
func (h *Handler) wake(ctx context.Context) {
	if w, ok := h.store.(interface{ WakeNow(context.Context) error }); ok {
		_ = w.WakeNow(ctx)
	}
}
