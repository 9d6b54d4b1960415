package main_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os/exec"
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

[[target]]
name = "idle"
source = "shop"
events = ["never"]
url = %q
`, good.URL, bad.URL, good.URL), "")

	postEvent(t, tm, "evt_1", "order.created", []byte(`{"n":1}`), "accepted")
	postEvent(t, tm, "evt_2", "order.created", []byte(`{"n":2}`), "accepted")
	postEvent(t, tm, "evt_1", "order.created", []byte(`{"n":1}`), "duplicate")
	postEvent(t, tm, "evt_2", "order.created", []byte(`{"changed":true}`), "duplicate")
	postEvent(t, tm, "evt_3", "order.failed", []byte(`{"n":3}`), "accepted")
	if code, _ := tm.Post("/hooks/nosuch", nil, []byte(`{}`)); code != http.StatusNotFound {
		t.Fatalf("unknown source: %d, want 404", code)
	}
	if code, _ := tm.Post("/hooks/shop", nil, []byte(`{}`)); code != http.StatusBadRequest {
		t.Fatalf("no event id: %d, want 400", code)
	}
	for _, id := range []string{"evt_1", "evt_2"} {
		waitStatus(t, tm, eventRow(t, tm, "shop", id), "good", queue.Done, 5*time.Second)
	}
	waitStatus(t, tm, eventRow(t, tm, "shop", "evt_3"), "bad", queue.Dead, 5*time.Second)

	wants := []string{
		`hookbox_received_total{reason="",result="accepted",source="shop"} 3`,
		`hookbox_received_total{reason="",result="duplicate",source="shop"} 2`,
		`hookbox_received_total{reason="unknown_source",result="rejected",source="(unknown)"} 1`,
		`hookbox_received_total{reason="bad_request",result="rejected",source="shop"} 1`,
		`hookbox_ack_seconds_count 7`,
		`hookbox_duplicate_conflicts_total 1`,
		`hookbox_delivered_total 2`,
		`hookbox_attempts_total{outcome="ok",target="good"} 2`,
		`hookbox_attempts_total{outcome="dead",target="bad"} 1`,
		`hookbox_dead_total{target="bad"} 1`,
		`hookbox_deliveries{status="dead",target="bad"} 1`,
		`hookbox_deliveries{status="pending",target="good"} 0`,
		`hookbox_deliveries{status="pending",target="idle"} 0`,
		`hookbox_oldest_queued_seconds{target="good"} 0`,
		`hookbox_receive_to_done_seconds_count{target="good"} 2`,
		`go_goroutines `,
		`process_open_fds `,
	}
	// Counters move just after the commit the store shows: poll briefly.
	var body string
	missing := wants
	deadline := time.Now().Add(5 * time.Second)
	for len(missing) > 0 && time.Now().Before(deadline) {
		body, missing = scrape(t, tm.AdminURL), nil
		for _, want := range wants {
			if !strings.Contains(body, want) {
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

	// The webhook listener serves webhooks only.
	resp, err := http.Get(tm.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /metrics on the webhook listener: %d, want 404", resp.StatusCode)
	}
}

// TestMetrics_OldestQueued: a delivery that waits shows its age on its
// target, and the others stay at 0.
func TestMetrics_OldestQueued(t *testing.T) {
	failing := newRecordingTarget(t, func(int) int { return http.StatusServiceUnavailable })
	tm := MustRunMain(t, fmt.Sprintf(`
[delivery]
backoff = "1h"
max_backoff = "1h"

[[source]]
name = "shop"
verify = "none"
insecure = true
event_id = "header:X-Id"
event_type = "header:X-Type"

[[target]]
name = "down"
source = "shop"
url = %q
`, failing.URL), "")
	postEvent(t, tm, "evt_1", "order.created", []byte(`{}`), "accepted")
	waitStatus(t, tm, eventRow(t, tm, "shop", "evt_1"), "down", queue.Retrying, 5*time.Second)
	time.Sleep(1100 * time.Millisecond) // an age of at least a second
	body := scrape(t, tm.AdminURL)
	if !strings.Contains(body, `hookbox_deliveries{status="retrying",target="down"} 1`) {
		t.Errorf("scrape lacks the retrying delivery:\n%s", body)
	}
	age := metricFloat(t, body, `hookbox_oldest_queued_seconds{target="down"}`)
	if age < 1 || age > 60 {
		t.Errorf("hookbox_oldest_queued_seconds{target=\"down\"} %v, want the delivery's age (1 s to a minute)", age)
	}
}

// TestMetrics_LocalSink: without a config, /metrics is on the sink's own
// loopback listener, beside the webhooks.
func TestMetrics_LocalSink(t *testing.T) {
	tm := MustRunMain(t, "", "")
	if code, _ := tm.Post("/hooks/demo", map[string]string{"X-Event-Id": "e1"}, []byte(`{}`)); code != http.StatusOK {
		t.Fatalf("post: %d", code)
	}
	body := scrape(t, tm.URL)
	if !strings.Contains(body, `hookbox_received_total{reason="",result="accepted",source="demo"} 1`) {
		t.Errorf("sink scrape lacks the accepted request:\n%s", body)
	}
	// The sink serves the UI and the API on its one loopback listener.
	for _, path := range []string{"/", "/api/events", "/health"} {
		resp, err := http.Get(tm.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d, want 200 from the sink's UI", path, resp.StatusCode)
		}
	}
}

// scrape GETs base/metrics and returns the body.
func scrape(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, b)
	}
	return string(b)
}

// TestMetrics_Promtool lints a scrape that holds every family (an
// answer of each kind, a delivery done, one dead, an alert sent) with
// promtool check metrics, when promtool is installed (CI installs it).
func TestMetrics_Promtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not on PATH: the scrape is not linted (apt-get install prometheus)")
	}
	good := newRecordingTarget(t, func(int) int { return http.StatusOK })
	alerts := newRecordingTarget(t, func(int) int { return http.StatusOK })
	tm := MustRunMain(t, fmt.Sprintf(`
[delivery]
max_attempts = 1

[alert]
url = %q

[[source]]
name = "shop"
verify = "none"
insecure = true
event_id = "header:X-Id"
event_type = "header:X-Type"

[[target]]
name = "good"
source = "shop"
events = ["ok"]
url = %q

[[target]]
name = "broken"
source = "shop"
events = ["fail"]
command = ["false"]
`, alerts.URL, good.URL), "")
	postEvent(t, tm, "e1", "ok", []byte(`{}`), "accepted")
	postEvent(t, tm, "e1", "ok", []byte(`{}`), "duplicate")
	postEvent(t, tm, "e2", "fail", []byte(`{}`), "accepted")
	tm.Post("/hooks/nosuch", nil, nil)
	waitFor(t, 10*time.Second, "the alert of the dead delivery", func() bool { return alerts.Count() > 0 })
	var body string
	waitFor(t, 5*time.Second, "the alert counted", func() bool {
		body = scrape(t, tm.AdminURL)
		return strings.Contains(body, `hookbox_alerts_total{kind="dead",outcome="sent"} 1`)
	})
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out.String())
	}
}

// metricValue is the value of the unlabelled metric name in a scrape.
func metricValue(t *testing.T, scrape, name string) int64 {
	t.Helper()
	return int64(metricFloat(t, scrape, name))
}

// metricFloat is the value of the series (a name and its labels, as
// written) in a scrape.
func metricFloat(t *testing.T, scrape, series string) float64 {
	t.Helper()
	for line := range strings.Lines(scrape) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", series, err)
			}
			return n
		}
	}
	t.Fatalf("scrape has no %s:\n%s", series, scrape)
	return 0
}
