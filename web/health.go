package web

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"time"

	"hookbox/config"
	"hookbox/health"
)

// HealthReader gives the alarms and the figures they are judged on
// (health.Monitor has it).
type HealthReader interface {
	Status(ctx context.Context) (health.Status, error)
}

// HealthAnswer is GET /api/health: the monitor's status, and the paused
// targets.
type HealthAnswer struct {
	health.Status
	Paused []PausedTarget `json:"paused"`
}

// PausedTarget is a paused target in HealthAnswer.
type PausedTarget struct {
	Name  string    `json:"name"`
	Since time.Time `json:"since"`
}

func (h *Handler) healthAnswer(ctx context.Context) (HealthAnswer, error) {
	var a HealthAnswer
	if h.opt.Health == nil {
		return a, fmt.Errorf("no health monitor")
	}
	st, err := h.opt.Health.Status(ctx)
	if err != nil {
		return a, err
	}
	paused, err := h.store.Paused(ctx)
	if err != nil {
		return a, err
	}
	a.Status, a.Paused = st, make([]PausedTarget, 0, len(paused))
	for _, p := range paused {
		a.Paused = append(a.Paused, PausedTarget{Name: p.Name, Since: p.Since.UTC()})
	}
	if a.Alarms == nil {
		a.Alarms = []health.AlarmStatus{}
	}
	return a, nil
}

func (h *Handler) apiHealth(w http.ResponseWriter, r *http.Request) {
	a, err := h.healthAnswer(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// healthData is what the health page shows.
type healthData struct {
	At      time.Time
	Window  string
	Firing  []health.AlarmStatus
	Quiet   []health.AlarmStatus
	Sources []sourceRow
	Targets []targetRow
	Paused  []PausedTarget
}

type sourceRow struct {
	health.SourceStatus
	Rate  bar // duplicate rate against its bound
	Alarm bool
}

type targetRow struct {
	health.TargetStatus
	P50, P99  bar // receive→done against the p99 bound
	Ages      []ageBar
	Paused    bool
	Failing   bool
	Alarm     bool
	P50Text   string
	P99Text   string
	Oldest    string
	AgeLegend string
}

// bar is a horizontal bar of a small chart: Width in a 0–100 viewBox,
// Mark the bound's position (-1: none).
type bar struct {
	Width float64
	Mark  float64
	Over  bool
	Text  string
}

// ageBar is one age bucket of a target's queue, as a stacked bar part.
type ageBar struct {
	Label string
	N     int64
	X, W  float64
}

func newBar(value, bound, scale float64, text string) bar {
	if scale <= 0 {
		scale = math.Max(value, 1)
	}
	b := bar{Width: math.Min(100, 100*value/scale), Mark: -1, Text: text}
	if bound > 0 {
		b.Mark = math.Min(100, 100*bound/scale)
		b.Over = value > bound
	}
	return b
}

func (h *Handler) healthPage(w http.ResponseWriter, r *http.Request) {
	a, err := h.healthAnswer(r.Context())
	if err != nil {
		h.failPage(w, r, err)
		return
	}
	d := healthData{At: a.At, Window: config.Duration(time.Duration(a.WindowSeconds) * time.Second).String(), Paused: a.Paused}
	bounds := map[string]float64{}
	firing := map[string]bool{}
	for _, al := range a.Alarms {
		if al.Firing {
			d.Firing = append(d.Firing, al)
			firing[al.Source+"\x00"+al.Target] = true
		} else {
			d.Quiet = append(d.Quiet, al)
		}
		bounds[al.Alarm+"\x00"+al.Source+al.Target] = al.Bound
	}
	paused := map[string]bool{}
	for _, p := range a.Paused {
		paused[p.Name] = true
	}
	for _, s := range a.Sources {
		bound := bounds[health.DuplicateRate+"\x00"+s.Name]
		scale := math.Max(math.Max(s.DuplicateRate, bound)*1.25, 0.05)
		d.Sources = append(d.Sources, sourceRow{SourceStatus: s, Alarm: firing[s.Name+"\x00"],
			Rate: newBar(s.DuplicateRate, bound, scale, fmt.Sprintf("%.1f%%", 100*s.DuplicateRate))})
	}
	for _, t := range a.Targets {
		bound := bounds[health.ReceiveToDone+"\x00"+t.Name]
		scale := math.Max(math.Max(t.P99Seconds, bound)*1.25, 0.001)
		row := targetRow{TargetStatus: t, Paused: paused[t.Name], Alarm: firing["\x00"+t.Name],
			Failing: t.ConsecutiveFailures > 0,
			P50:     newBar(t.P50Seconds, bound, scale, seconds(t.P50Seconds)),
			P99:     newBar(t.P99Seconds, bound, scale, seconds(t.P99Seconds)),
			Oldest:  seconds(t.OldestQueuedSeconds)}
		// Queued by age: under 1m, 1–10m, 10m–1h, over 1h, as parts of
		// one bar as wide as the queue is against the longest one.
		o1, o10, o60 := t.QueuedOlderThan["1m"], t.QueuedOlderThan["10m"], t.QueuedOlderThan["1h"]
		parts := []ageBar{{Label: "< 1m", N: t.Queued - o1}, {Label: "1m–10m", N: o1 - o10}, {Label: "10m–1h", N: o10 - o60}, {Label: "> 1h", N: o60}}
		x := 0.0
		for _, p := range parts {
			if t.Queued > 0 && p.N > 0 {
				p.X, p.W = x, 100*float64(p.N)/float64(t.Queued)
				x += p.W
				row.Ages = append(row.Ages, p)
			}
		}
		d.Targets = append(d.Targets, row)
	}
	h.render(w, r, http.StatusOK, "health", page{Title: "Health", Nav: "health", Data: d})
}

// seconds writes a duration given in seconds the way the pages do.
func seconds(s float64) string {
	if s <= 0 {
		return "–"
	}
	return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
}
