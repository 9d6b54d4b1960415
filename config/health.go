package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Health configures the health alarms, sent through [alert]. A bound of 0
// turns its alarm off.
type Health struct {
	// Window is what the duplicate rate and the receive→done p99 are
	// taken over (default 10m).
	Window Duration `toml:"window"`
	// DuplicateRate is the share of duplicates among the requests of a
	// source in the window above which its alarm fires (default 20%).
	DuplicateRate Percent `toml:"duplicate_rate"`
	// MinVolume is how many requests (new and duplicates) a source must
	// have in the window before its duplicate rate can fire (default 50).
	MinVolume int `toml:"min_volume"`
	// OldestQueued is how long a delivery may wait before its target's
	// alarm fires (default 10m).
	OldestQueued Duration `toml:"oldest_queued"`
	// ReceiveToDoneP99 bounds the 99th percentile, per target, of the
	// time from receipt to done of the deliveries done in the window
	// (default 5m).
	ReceiveToDoneP99 Duration `toml:"receive_to_done_p99"`
	// TargetFailing is how many failed attempts of one target in a row,
	// with no success between them, fire its alarm (default 10).
	TargetFailing int `toml:"target_failing"`
	// Interval is how often the alarms are checked (default and at most
	// 10s).
	Interval Duration `toml:"interval"`
}

// DefaultHealth is [health] when the file does not say otherwise.
func DefaultHealth() Health {
	return Health{
		Window:           Duration(10 * time.Minute),
		DuplicateRate:    0.20,
		MinVolume:        50,
		OldestQueued:     Duration(10 * time.Minute),
		ReceiveToDoneP99: Duration(5 * time.Minute),
		TargetFailing:    10,
		Interval:         Duration(10 * time.Second),
	}
}

// MaxHealthInterval is the longest [health] interval: the alarms are
// checked at least this often.
const MaxHealthInterval = 10 * time.Second

func validateHealth(sc scope, h *Health) {
	positive(sc, "window", h.Window)
	if h.DuplicateRate < 0 || h.DuplicateRate >= 1 {
		sc.add("duplicate_rate", h.DuplicateRate.String(), `want a share below 100%, e.g. "20%" ("0%" turns the alarm off)`)
	}
	if h.MinVolume < 1 {
		sc.add("min_volume", strconv.Itoa(h.MinVolume), "must be at least 1: a rate needs requests to be a rate of")
	}
	if h.TargetFailing < 0 {
		sc.add("target_failing", strconv.Itoa(h.TargetFailing), "must be 0 (off) or more")
	}
	if positive(sc, "interval", h.Interval) && h.Interval.D() > MaxHealthInterval {
		sc.add("interval", h.Interval.String(), "must be at most 10s: the alarms are checked at least every 10 s")
	}
}

// validateSilence checks a source's silence: 0 (off) or at least a second.
func validateSilence(sc scope, s *Source) {
	if s.Silence != 0 && s.Silence < Duration(time.Second) {
		sc.add("silence", s.Silence.String(), `must be at least 1s, e.g. "6h" (or left out: no alarm)`)
	}
}

// Percent is a share written in TOML as a percentage ("20%", "2.5%") or a
// fraction (0.2). It holds the fraction.
type Percent float64

// F returns p as a fraction: 0.2 for "20%".
func (p Percent) F() float64 { return float64(p) }

// String formats p as it would be written in a config file: "20%".
func (p Percent) String() string {
	return strconv.FormatFloat(float64(p)*100, 'f', -1, 64) + "%"
}

// MarshalText implements encoding.TextMarshaler.
func (p Percent) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler: "20%".
func (p *Percent) UnmarshalText(text []byte) error {
	s := string(text)
	num, ok := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !ok || err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("invalid percentage %q (want e.g. \"20%%\")", s)
	}
	*p = Percent(v / 100)
	return nil
}
