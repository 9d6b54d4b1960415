package web

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"

	"hookbox/queue"
	"hookbox/view"
)

// LanesPage is GET /api/lanes: lanes by target and key, as `hookbox lanes
// --json` prints them, and the cursor of the next page ("" on the last).
type LanesPage struct {
	Lanes []view.Lane `json:"lanes"`
	Next  string      `json:"next"`
}

// apiLanes is GET /api/lanes?target=&blocked=1&cursor=&limit=.
func (h *Handler) apiLanes(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	f := queue.LaneFilter{Target: v.Get("target"), Limit: 100}
	switch b := v.Get("blocked"); b {
	case "", "0", "false":
	case "1", "true":
		f.Blocked = true
	default:
		writeError(w, http.StatusBadRequest, "blocked", "blocked: "+strconv.Quote(b)+": want 1 or true")
		return
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLimit {
			writeError(w, http.StatusBadRequest, "limit", "limit: "+strconv.Quote(s)+": want a number from 1 to "+strconv.Itoa(MaxLimit))
			return
		}
		f.Limit = n
	}
	if c := v.Get("cursor"); c != "" {
		raw, err := base64.RawURLEncoding.DecodeString(c)
		target, key, ok := strings.Cut(string(raw), "\x00")
		if err != nil || !ok {
			writeError(w, http.StatusBadRequest, "cursor", "cursor: "+strconv.Quote(c)+" is not a cursor (the next of an earlier page)")
			return
		}
		f.After = [2]string{target, key}
	}
	page := LanesPage{Lanes: []view.Lane{}}
	err := view.ListLanes(r.Context(), h.store, f, func(l view.Lane) error {
		page.Lanes = append(page.Lanes, l)
		return nil
	})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if n := len(page.Lanes); n == f.Limit {
		last := page.Lanes[n-1]
		page.Next = base64.RawURLEncoding.EncodeToString([]byte(last.Target + "\x00" + last.Key))
	}
	writeJSON(w, http.StatusOK, page)
}
