package metrics_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"hookbox/metrics"
	"hookbox/queue"
)

// The families read at scrape time say what each part reports: the
// alarms firing, every target paused or not, the blocked lanes and their
// oldest, the skipped deliveries, the fetches and the leases held.
func TestRegisterState(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	m := metrics.New(func() time.Time { return now })
	err := m.RegisterState(metrics.State{
		Alarms: func(context.Context) (map[string]bool, error) {
			return map[string]bool{"duplicate_rate": true, "silence": false}, nil
		},
		Paused: func(context.Context) ([]queue.PausedTarget, error) {
			return []queue.PausedTarget{{Name: "crm", Since: now.Add(-time.Hour)}}, nil
		},
		Targets: []string{"crm", "mail"},
		Lanes: func(context.Context) (queue.LaneStats, error) {
			return queue.LaneStats{Blocked: 2, OldestBlocked: now.Add(-90 * time.Second), Skipped: map[string]int64{"stale": 3}}, nil
		},
		Refetches: func() map[string]int64 { return map[string]int64{"ok": 5, "gone": 1} },
		Leader:    func(l string) bool { return l == "sweeper" },
		Leases:    []string{"sweeper", "health"},
		Now:       func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	m.ObserveThrottled("crm", queue.ThrottledRate, 4)
	want := `
hookbox_health{alarm="duplicate_rate"} 1
hookbox_health{alarm="silence"} 0
hookbox_target_paused{target="crm"} 1
hookbox_target_paused{target="mail"} 0
hookbox_lanes_blocked{figure="lanes"} 2
hookbox_lanes_blocked{figure="oldest_seconds"} 90
hookbox_deliveries_skipped{reason="stale"} 3
hookbox_deliveries_skipped{reason="superseded"} 0
hookbox_refetches_total{outcome="gone"} 1
hookbox_refetches_total{outcome="ok"} 5
hookbox_leader{lease="health"} 0
hookbox_leader{lease="sweeper"} 1
hookbox_throttled_total{reason="rate",target="crm"} 4
`
	got, err := testutil.CollectAndFormat(m.Registry, expfmt.TypeTextPlain, "hookbox_health", "hookbox_target_paused", "hookbox_lanes_blocked",
		"hookbox_deliveries_skipped", "hookbox_refetches_total", "hookbox_leader", "hookbox_throttled_total")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
		if !strings.Contains(string(got), line+"\n") {
			t.Errorf("scrape lacks %q:\n%s", line, got)
		}
	}
}
