package main_test

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"hookbox/queue"
)

func TestMetrics(t *testing.T) {
	good := newRecordingTarget(t, func(int) int { return http.StatusOK })
	bad := newRecordingTarget(t, func(int) int { return http.StatusInternalServerError })
	tm := MustRunMain(t, fmt.Sprintf(`
[delivery]
max_attempts = 1

[[source]]
name = "shop"
verify = "none"
insecure = true
event_id = "header:X-Id"
event_type = "header:X-Type"

[[target]]
name = "good"
source = "shop"
events = ["order.created"]
url = %q

[[target]]
name = "bad"
source = "shop"
events = ["order.failed"]
url = %q
`, good.URL, bad.URL), "")

	postEvent(t, tm, "evt_1", "order.created", []byte(`{"n":1}`), "accepted")
	postEvent(t, tm, "evt_2", "order.created", []byte(`{"n":2}`), "accepted")
	postEvent(t, tm, "evt_1", "order.created", []byte(`{"n":1}`), "duplicate")
	postEvent(t, tm, "evt_2", "order.created", []byte(`{"changed":true}`), "duplicate")
	postEvent(t, tm, "evt_3", "order.failed", []byte(`{"n":3}`), "accepted")
	for _, id := range []string{"evt_1", "evt_2"} {
		waitStatus(t, tm, eventRow(t, tm, "shop", id), "good", queue.Done, 5*time.Second)
	}
	waitStatus(t, tm, eventRow(t, tm, "shop", "evt_3"), "bad", queue.Dead, 5*time.Second)

	wants := []string{
		`hookbox_received_total{result="accepted"} 3`,
		`hookbox_received_total{result="duplicate"} 2`,
		`hookbox_duplicate_conflicts_total 1`,
		`hookbox_delivered_total 2`,
		`hookbox_dead_total 1`,
		`hookbox_deliveries{status="dead"} 1`,
		`hookbox_deliveries{status="pending"} 0`,
		`hookbox_oldest_queued_seconds 0.000`,
		`hookbox_receive_to_done_seconds_count 2`,
	}
	// Counters move just after the commit the store shows: poll briefly.
	var body string
	missing := wants
	deadline := time.Now().Add(5 * time.Second)
	for len(missing) > 0 && time.Now().Before(deadline) {
		resp, err := http.Get(tm.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /metrics: %d %s", resp.StatusCode, b)
		}
		body, missing = string(b), nil
		for _, want := range wants {
			if !strings.Contains(body, want+"\n") {
				missing = append(missing, want)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(missing) > 0 {
		t.Fatalf("metrics lack %q; got:\n%s", missing, body)
	}

	// Every event received, duplicate seen and result recorded was a write
	// of some commit; commits never outnumber writes.
	commits, writes := metricValue(t, body, "hookbox_store_commits_total"), metricValue(t, body, "hookbox_store_writes_total")
	if commits < 1 || writes < 5 || commits > writes {
		t.Errorf("hookbox_store_commits_total %d, hookbox_store_writes_total %d: want 1 ≤ commits ≤ writes and at least 5 writes", commits, writes)
	}
	if failed := metricValue(t, body, "hookbox_store_failed_commits_total"); failed != 0 {
		t.Errorf("hookbox_store_failed_commits_total %d, want 0", failed)
	}
}

// metricValue is the value of the unlabelled metric name in a scrape.
func metricValue(t *testing.T, scrape, name string) int64 {
	t.Helper()
	for line := range strings.Lines(scrape) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return n
		}
	}
	t.Fatalf("scrape has no %s:\n%s", name, scrape)
	return 0
}
