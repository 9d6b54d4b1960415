package replay_test

import (
	"testing"
	"time"

	"hookbox/config"
	"hookbox/replay"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	targets := []config.Target{{Name: "billing"}, {Name: "mail"}}
	sel, err := replay.Parse(replay.Request{Dead: true, Since: "2h", Until: "2026-12-01T11:30:00Z", Target: "mail"}, targets, now)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.DeadOnly || sel.Target != "mail" || !sel.Since.Equal(now.Add(-2*time.Hour)) || !sel.Until.Equal(now.Add(-30*time.Minute)) {
		t.Errorf("Parse=%+v, want dead, mail, 10:00 to 11:30", sel)
	}
	for _, c := range []struct {
		name  string
		req   replay.Request
		field string
	}{
		{"Nothing selected", replay.Request{Target: "mail"}, "event"},
		{"Negative event", replay.Request{Event: -3}, "event"},
		{"Bad since", replay.Request{Since: "last week"}, "since"},
		{"Bad until", replay.Request{Since: "1h", Until: "soon"}, "until"},
		{"Until before since", replay.Request{Since: "1h", Until: "2h"}, "until"},
		{"Unknown target", replay.Request{Event: 1, Target: "billing2"}, "target"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := replay.Parse(c.req, targets, now)
			fe, ok := err.(*replay.FieldError)
			if !ok || fe.Field != c.field {
				t.Errorf("Parse(%+v): %v, want a mistake in %s", c.req, err, c.field)
			}
		})
	}
	// Without the config's targets (a config that only names the store)
	// any target name goes: none can be told a typo.
	if _, err := replay.Parse(replay.Request{Event: 1, Target: "anything"}, nil, now); err != nil {
		t.Errorf("Parse without targets: %v", err)
	}
}
