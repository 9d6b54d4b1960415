package web

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"hookbox/config"
	"hookbox/queue"
)

// Pauser is what the targets API needs of a store engine: the pauses of
// `hookbox pause` and `resume`.
type Pauser interface {
	Pause(ctx context.Context, target string, now time.Time) (queue.PauseResult, error)
	Resume(ctx context.Context, target string, now time.Time) (queue.PauseResult, error)
	Paused(ctx context.Context) ([]queue.PausedTarget, error)
}

// TargetState is a line of GET /api/targets.
type TargetState struct {
	Name        string     `json:"name"`
	Sources     []string   `json:"sources"`
	Kind        string     `json:"kind"` // url or command
	Paused      bool       `json:"paused"`
	PausedSince *time.Time `json:"paused_since,omitempty"`
	Order       string     `json:"order"` // none, fifo, latest or coalesce
}

// PauseAnswer is the answer of POST /api/targets/{name}/pause and
// …/resume: what the pause or resume did, as `hookbox pause` says it.
type PauseAnswer struct {
	Target     string     `json:"target"`
	Paused     bool       `json:"paused"`            // the state now
	Already    bool       `json:"already"`           // it was in that state before
	Since      *time.Time `json:"since,omitempty"`   // paused: since when
	Deliveries int64      `json:"deliveries"`        // held (pause) or released (resume)
	Running    int64      `json:"running,omitempty"` // pause: attempts running now, which finish
}

func (h *Handler) apiTargets(w http.ResponseWriter, r *http.Request) {
	paused, err := h.store.Paused(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	since := map[string]time.Time{}
	for _, p := range paused {
		since[p.Name] = p.Since
	}
	out := []TargetState{}
	for _, t := range h.opt.Targets {
		st := TargetState{Name: t.Name, Sources: t.SourceNames(), Kind: "url", Order: cmp.Or(t.Order, "none")}
		if len(t.Command) > 0 {
			st.Kind = "command"
		}
		if s, ok := since[t.Name]; ok {
			st.Paused, st.PausedSince = true, &s
		}
		out = append(out, st)
	}
	writeJSON(w, http.StatusOK, map[string]any{"targets": out})
}

// apiPause is POST /api/targets/{name}/pause (pause true) and …/resume.
func (h *Handler) apiPause(pause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if msg := crossSite(r); msg != "" {
			writeError(w, http.StatusForbidden, "", msg)
			return
		}
		name := r.PathValue("name")
		if !slices.ContainsFunc(h.opt.Targets, func(t config.Target) bool { return t.Name == name }) {
			writeError(w, http.StatusNotFound, "name", "no target "+name+" in the config (its targets: "+targetNames(h.opt.Targets)+")")
			return
		}
		do, verb := h.store.Resume, "resume"
		if pause {
			do, verb = h.store.Pause, "pause"
		}
		res, err := do(r.Context(), name, h.opt.Now())
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if !pause && res.Deliveries > 0 {
			h.wake(r.Context())
		}
		h.opt.Logger.Info().Str("target", name).Bool("already", res.Already).Int64("deliveries", res.Deliveries).
			Msg(verb + " from the admin API")
		a := PauseAnswer{Target: name, Paused: pause, Already: res.Already, Deliveries: res.Deliveries, Running: res.Running}
		if pause && !res.Since.IsZero() {
			s := res.Since.UTC()
			a.Since = &s
		}
		writeJSON(w, http.StatusOK, a)
	}
}

func targetNames(ts []config.Target) string {
	if len(ts) == 0 {
		return "none"
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}
