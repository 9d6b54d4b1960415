package config_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"hookbox/config"
)

func TestHealth_Defaults(t *testing.T) {
	cfg, err := config.Parse("c.toml", []byte(""), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	h := cfg.Health
	if h.Window.D() != 10*time.Minute || h.DuplicateRate.F() != 0.2 || h.MinVolume != 50 ||
		h.OldestQueued.D() != 10*time.Minute || h.ReceiveToDoneP99.D() != 5*time.Minute ||
		h.TargetFailing != 10 || h.Interval.D() != 10*time.Second {
		t.Errorf("default [health] = %+v, want 10m 20%% 50 10m 5m 10 10s", h)
	}
}

func TestHealth_Parse(t *testing.T) {
	cfg, err := config.Parse("c.toml", []byte(`
[health]
window = "5m"
duplicate_rate = "2.5%"
min_volume = 10
oldest_queued = "0s"
receive_to_done_p99 = "30s"
target_failing = 0
interval = "500ms"

[[source]]
name = "s"
verify = "none"
insecure = true
event_id = "json:id"
silence = "6h"
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	h := cfg.Health
	if h.Window.D() != 5*time.Minute || h.DuplicateRate.F() != 0.025 || h.MinVolume != 10 || h.OldestQueued != 0 ||
		h.ReceiveToDoneP99.D() != 30*time.Second || h.TargetFailing != 0 || h.Interval.D() != 500*time.Millisecond {
		t.Errorf("[health] = %+v", h)
	}
	if got := cfg.Sources[0].Silence.D(); got != 6*time.Hour {
		t.Errorf("source silence = %v, want 6h", got)
	}
}

func TestHealth_BadValues(t *testing.T) {
	for _, c := range []struct{ text, field, msg string }{
		{"[health]\nduplicate_rate = \"120%\"", "health.duplicate_rate", "below 100%"},
		{"[health]\nduplicate_rate = \"twenty\"", "health.duplicate_rate", "invalid percentage"},
		{"[health]\nduplicate_rate = 20", "health.duplicate_rate", `want e.g. "20%"`},
		{"[health]\nmin_volume = 0", "health.min_volume", "at least 1"},
		{"[health]\ntarget_failing = -1", "health.target_failing", "0 (off) or more"},
		{"[health]\ninterval = \"1m\"", "health.interval", "at most 10s"},
		{"[health]\nwindow = \"0s\"", "health.window", "greater than 0"},
		{"[health]\nwindw = \"5m\"", "health.windw", "unknown key"},
		{"[[source]]\nname = \"s\"\nverify = \"none\"\ninsecure = true\nevent_id = \"json:id\"\nsilence = \"10ms\"", "source[s].silence", "at least 1s"},
	} {
		_, err := config.Parse("c.toml", []byte(c.text), env(nil))
		ps := problems(t, err)
		if !slices.Contains(fields(ps), c.field) {
			t.Errorf("%q: problems %v, want one naming %s", c.text, err, c.field)
			continue
		}
		if !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q: %v, want it to say %q", c.text, err, c.msg)
		}
	}
}
