package main_test

import (
	hookbox "hookbox"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"hookbox/dedupe"
	"hookbox/queue"
	"hookbox/view"
)

// deliveryConfig is a [delivery] section with waits short enough for tests
// and one unsigned source "shop" (event id in X-Id, type in X-Type);
// targets are appended by each test.
const deliveryConfig = `
[delivery]
workers = 4
max_attempts = 5
backoff = "50ms"
max_backoff = "200ms"
lease = "1m"

[[source]]
name = "shop"
verify = "none"
insecure = true
event_id = "header:X-Id"
event_type = "header:X-Type"
`

// targetHit is one request seen by a recordingTarget.
type targetHit struct {
	At     time.Time
	Method string
	Header http.Header
	Body   []byte
}

// recordingTarget is an httptest server that records every request and
// answers with Status(n) for the n-th request (1-based); nil Status answers
// 200. Header, if set, adds its headers to the n-th answer.
type recordingTarget struct {
	*httptest.Server
	Status func(n int) int
	Header func(n int) http.Header
	Delay  time.Duration

	mu   sync.Mutex
	hits []targetHit
}

func newRecordingTarget(tb testing.TB, status func(n int) int) *recordingTarget {
	tb.Helper()
	rt := &recordingTarget{Status: status}
	rt.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rt.mu.Lock()
		rt.hits = append(rt.hits, targetHit{At: time.Now(), Method: r.Method, Header: r.Header.Clone(), Body: body})
		n := len(rt.hits)
		rt.mu.Unlock()
		if rt.Delay > 0 {
			time.Sleep(rt.Delay)
		}
		code := http.StatusOK
		if rt.Status != nil {
			code = rt.Status(n)
		}
		if rt.Header != nil {
			for k, v := range rt.Header(n) {
				w.Header()[k] = v
			}
		}
		w.WriteHeader(code)
	}))
	tb.Cleanup(rt.Close)
	return rt
}

func (rt *recordingTarget) Hits() []targetHit {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]targetHit(nil), rt.hits...)
}

func (rt *recordingTarget) Count() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return len(rt.hits)
}

// failFirst answers 500 to the first n requests, then 200.
func failFirst(n int) func(int) int {
	return func(i int) int {
		if i <= n {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	}
}

// writeTargetScript writes an executable /bin/sh script into a temp dir.
func writeTargetScript(tb testing.TB, body string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "target.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		tb.Fatal(err)
	}
	return path
}

// postEvent posts an event to /hooks/shop and fails unless it is answered 200
// with the given status ("accepted" or "duplicate").
func postEvent(tb testing.TB, tm *testMain, id, typ string, body []byte, want string) {
	tb.Helper()
	code, resp := tm.Post("/hooks/shop", map[string]string{"X-Id": id, "X-Type": typ, "Content-Type": "application/json"}, body)
	if code != http.StatusOK || !strings.Contains(resp, `"status":"`+want+`"`) {
		tb.Fatalf("post %s: %d %s, want 200 %s", id, code, resp, want)
	}
}

// eventRow returns the row id of the stored event (source, event id).
func eventRow(tb testing.TB, tm *testMain, source, eventID string) int64 {
	tb.Helper()
	list, err := tm.DB.ListEvents(context.Background(), dedupe.Filter{Source: source})
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range list {
		if e.EventID == eventID {
			return e.ID
		}
	}
	tb.Fatalf("event %s/%s not stored", source, eventID)
	return 0
}

// deliveriesOf returns the deliveries of one event row, keyed by target.
func deliveriesOf(tb testing.TB, tm *testMain, row int64) map[string]queue.Delivery {
	tb.Helper()
	m, err := tm.DB.Deliveries(context.Background(), []int64{row})
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]queue.Delivery{}
	for _, d := range m[row] {
		out[d.Target] = d
	}
	return out
}

// waitStatus waits until the delivery of row to target has the given status.
func waitStatus(tb testing.TB, tm *testMain, row int64, target, status string, within time.Duration) queue.Delivery {
	tb.Helper()
	var d queue.Delivery
	waitFor(tb, within, fmt.Sprintf("delivery %d→%s %s", row, target, status), func() bool {
		d = deliveriesOf(tb, tm, row)[target]
		return d.Status == status
	})
	return d
}

// eventDetail is `hookbox event --json ID`.
type eventDetail struct {
	view.Event
	ContentType string `json:"content_type"`
}

func cliEvent(tb testing.TB, dir string, row int64) eventDetail {
	tb.Helper()
	var e eventDetail
	if err := json.Unmarshal([]byte(cliRun(tb, dir, "event", "--json", strconv.FormatInt(row, 10))), &e); err != nil {
		tb.Fatalf("decode event --json: %v", err)
	}
	return e
}

func readPIDFile(tb testing.TB, path string) int {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("read pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		tb.Fatalf("pid file=%q, want a pid", b)
	}
	return pid
}

func readFileLines(tb testing.TB, path string) []string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Fields(string(b))
}

func TestDelivery_BodyAndHeaders(t *testing.T) {
	web := newRecordingTarget(t, nil)
	out := t.TempDir()
	script := writeTargetScript(t, `cat > "$OUT/stdin" || exit 1
printf '%s\n%s\n%s\n%s\n' "$HOOKBOX_EVENT_ID" "$HOOKBOX_SOURCE" "$HOOKBOX_EVENT_TYPE" "$HOOKBOX_ATTEMPT" > "$OUT/env"
printf '%s\n%s\n' "$HOOKBOX_TARGET" "$HOOKBOX_STORE" > "$OUT/where"
`)
	tm := MustRunMain(t, deliveryConfig+fmt.Sprintf(`
[[target]]
name = "web"
source = "shop"
url = %q

[[target]]
name = "script"
source = "shop"
command = [%q]
env = { OUT = %q }
`, web.URL, script, out), "")

	// Not UTF-8, with a NUL and a CRLF: must arrive as sent.
	body := []byte("{\"note\":\"caf\xe9 \xff\xfe\x00\"}\r\n")
	const contentType = "text/plain; charset=iso-8859-1"
	code, resp := tm.Post("/hooks/shop", map[string]string{"X-Id": "evt_1", "X-Type": "order.created", "Content-Type": contentType}, body)
	if code != http.StatusOK {
		t.Fatalf("post: %d %s, want 200", code, resp)
	}
	row := eventRow(t, tm, "shop", "evt_1")
	waitStatus(t, tm, row, "web", queue.Done, 5*time.Second)
	waitStatus(t, tm, row, "script", queue.Done, 5*time.Second)
	if got := cliEvent(t, tm.Dir, row).ContentType; got != contentType {
		t.Errorf("hookbox event shows content type %q, want %q", got, contentType)
	}

	t.Run("URL", func(t *testing.T) {
		hits := web.Hits()
		if len(hits) != 1 {
			t.Fatalf("target got %d requests, want 1", len(hits))
		}
		h := hits[0]
		if h.Method != http.MethodPost {
			t.Errorf("method=%s, want POST", h.Method)
		}
		if !bytes.Equal(h.Body, body) {
			t.Errorf("body=%q, want %q byte-exact", h.Body, body)
		}
		for k, want := range map[string]string{
			"Content-Type":     contentType,
			"Hookbox-Event-Id": "evt_1",
			"Hookbox-Source":   "shop",
			"Hookbox-Attempt":  "1",
			"Idempotency-Key":  "shop:evt_1",
		} {
			if got := h.Header.Get(k); got != want {
				t.Errorf("%s=%q, want %q", k, got, want)
			}
		}
	})

	t.Run("Command", func(t *testing.T) {
		stdin, err := os.ReadFile(filepath.Join(out, "stdin"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(stdin, body) {
			t.Errorf("stdin=%q, want %q byte-exact", stdin, body)
		}
		env, err := os.ReadFile(filepath.Join(out, "env"))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(env), "evt_1\nshop\norder.created\n1\n"; got != want {
			t.Errorf("HOOKBOX_EVENT_ID/SOURCE/EVENT_TYPE/ATTEMPT=%q, want %q", got, want)
		}
		where, err := os.ReadFile(filepath.Join(out, "where"))
		if err != nil {
			t.Fatal(err)
		}
		store, err := filepath.EvalSymlinks(filepath.Join(tm.Dir, "hookbox.db"))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(where), "script\n"+store+"\n"; got != want {
			t.Errorf("HOOKBOX_TARGET/STORE=%q, want %q (the target's name, the store's absolute path)", got, want)
		}
	})
}

func TestDelivery_RetriesThenDone(t *testing.T) {
	web := newRecordingTarget(t, failFirst(2))
	tm := MustRunMain(t, `
[delivery]
max_attempts = 5
backoff = "100ms"
max_backoff = "1s"

[[source]]
name = "shop"
verify = "none"
insecure = true
event_id = "header:X-Id"
event_type = "header:X-Type"

[[target]]
name = "web"
source = "shop"
url = "`+web.URL+`"
`, "")
	postEvent(t, tm, "evt_r", "order.created", []byte(`{}`), "accepted")
	row := eventRow(t, tm, "shop", "evt_r")
	d := waitStatus(t, tm, row, "web", queue.Done, 5*time.Second)
	if d.Attempts != 3 {
		t.Errorf("attempts=%d, want 3", d.Attempts)
	}

	hits := web.Hits()
	if len(hits) != 3 {
		t.Fatalf("target got %d requests, want 3", len(hits))
	}
	for i, h := range hits {
		if got, want := h.Header.Get("Hookbox-Attempt"), strconv.Itoa(i+1); got != want {
			t.Errorf("request %d: Hookbox-Attempt=%s, want %s", i+1, got, want)
		}
	}
	// backoff·2^(n−1) with ±20% jitter: 80–120ms, then 160–240ms.
	gap1, gap2 := hits[1].At.Sub(hits[0].At), hits[2].At.Sub(hits[1].At)
	if gap1 < 80*time.Millisecond || gap2 < 160*time.Millisecond {
		t.Errorf("waits %v then %v, want at least 80ms then 160ms", gap1, gap2)
	}
	if gap2 <= gap1 {
		t.Errorf("waits %v then %v, want the second longer", gap1, gap2)
	}

	e := cliEvent(t, tm.Dir, row)
	if len(e.Deliveries) != 1 || len(e.Deliveries[0].History) != 3 {
		t.Fatalf("event --json deliveries=%+v, want one with 3 attempts", e.Deliveries)
	}
	for i, a := range e.Deliveries[0].History {
		wantOutcome, wantStatus := "failed", 500
		if i == 2 {
			wantOutcome, wantStatus = "ok", 200
		}
		if a.Attempt != i+1 || a.Outcome != wantOutcome || a.HTTPStatus != wantStatus {
			t.Errorf("attempt %d: %+v, want #%d %s http %d", i+1, a, i+1, wantOutcome, wantStatus)
		}
	}
	text := cliRun(t, tm.Dir, "event", strconv.FormatInt(row, 10))
	for _, want := range []string{"web: done after 3 attempt(s)", "#1 ", "#2 ", "#3 "} {
		if !strings.Contains(text, want) {
			t.Errorf("hookbox event output lacks %q:\n%s", want, text)
		}
	}
}

// A target's Retry-After later than the backoff sets the next attempt.
func TestDelivery_RetryAfterWins(t *testing.T) {
	web := newRecordingTarget(t, func(n int) int {
		if n == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	web.Header = func(n int) http.Header {
		if n == 1 {
			return http.Header{"Retry-After": {"1"}}
		}
		return nil
	}
	tm := MustRunMain(t, deliveryConfig+`
[[target]]
name = "web"
source = "shop"
url = "`+web.URL+`"
`, "")
	postEvent(t, tm, "evt_ra", "order.created", []byte(`{}`), "accepted")
	row := eventRow(t, tm, "shop", "evt_ra")
	waitStatus(t, tm, row, "web", queue.Done, 5*time.Second)
	hits := web.Hits()
	if len(hits) != 2 {
		t.Fatalf("target got %d requests, want 2", len(hits))
	}
	// The backoff alone (50ms, at most 200ms) would retry far sooner.
	if gap := hits[1].At.Sub(hits[0].At); gap < 900*time.Millisecond {
		t.Errorf("retried after %v, want Retry-After's 1s", gap)
	}
}

func TestDelivery_BusinessEffectFailsAfterRecord(t *testing.T) {
	web := newRecordingTarget(t, func(n int) int {
		if n == 1 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	out := t.TempDir()
	// Fails with EX_TEMPFAIL the first time, then does its work.
	script := writeTargetScript(t, `if [ ! -e "$OUT/tried" ]; then : > "$OUT/tried"; exit 75; fi
echo "$HOOKBOX_EVENT_ID" >> "$OUT/effects"
`)
	tm := MustRunMain(t, deliveryConfig+fmt.Sprintf(`
[[target]]
name = "web"
source = "shop"
url = %q

[[target]]
name = "script"
source = "shop"
command = [%q]
env = { OUT = %q }
`, web.URL, script, out), "")

	postEvent(t, tm, "evt_b", "order.created", []byte(`{"id":"evt_b"}`), "accepted")
	row := eventRow(t, tm, "shop", "evt_b")
	for _, target := range []string{"web", "script"} {
		d := waitStatus(t, tm, row, target, queue.Done, 5*time.Second)
		if d.Attempts != 2 {
			t.Errorf("%s: attempts=%d, want 2 (one failure, one retry)", target, d.Attempts)
		}
	}
	if got := web.Count(); got != 2 {
		t.Errorf("URL target got %d requests, want 2", got)
	}
	if got := readFileLines(t, filepath.Join(out, "effects")); len(got) != 1 || got[0] != "evt_b" {
		t.Errorf("command effects=%q, want [evt_b] once", got)
	}
	e := cliEvent(t, tm.Dir, row)
	if len(e.Deliveries) != 2 {
		t.Fatalf("event shows %d deliveries, want web and script", len(e.Deliveries))
	}
	for _, d := range e.Deliveries {
		if len(d.History) != 2 || d.History[0].Outcome != "failed" || d.History[1].Outcome != "ok" {
			t.Errorf("%s history=%+v, want failed then ok", d.Target, d.History)
		}
	}
}

// alertSink records alert documents; it answers Status(n) for the n-th.
type alertSink struct {
	*httptest.Server
	mu     sync.Mutex
	alerts []map[string]any
	tries  int
}

func newAlertSink(tb testing.TB, status func(n int) int) *alertSink {
	tb.Helper()
	s := &alertSink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.tries++
		n := s.tries
		s.mu.Unlock()
		code := http.StatusOK
		if status != nil {
			code = status(n)
		}
		if code/100 == 2 {
			var a map[string]any
			if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
				code = http.StatusBadRequest
			} else {
				s.mu.Lock()
				s.alerts = append(s.alerts, a)
				s.mu.Unlock()
			}
		}
		w.WriteHeader(code)
	}))
	tb.Cleanup(s.Close)
	return s
}

func (s *alertSink) Received() (alerts []map[string]any, tries int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.alerts...), s.tries
}

func deadConfig(targetURL, alertURL string) string {
	return fmt.Sprintf(`
[delivery]
max_attempts = 3
backoff = "20ms"
max_backoff = "50ms"

[alert]
url = %q

[[source]]
name = "shop"
verify = "none"
insecure = true
event_id = "header:X-Id"
event_type = "header:X-Type"

[[target]]
name = "web"
source = "shop"
url = %q
`, alertURL, targetURL)
}

// waitAlerted waits until the dead letter of row has been alerted.
func waitAlerted(tb testing.TB, tm *testMain, row int64, within time.Duration) queue.DeadLetter {
	tb.Helper()
	var dl queue.DeadLetter
	waitFor(tb, within, "the alert to be recorded as sent", func() bool {
		list, err := tm.DB.DeadLetters(context.Background(), true, 0)
		if err != nil {
			tb.Fatal(err)
		}
		for _, d := range list {
			if d.Event == row && !d.AlertedAt.IsZero() {
				dl = d
				return true
			}
		}
		return false
	})
	return dl
}

func TestDelivery_DeadLetterAndAlert(t *testing.T) {
	t.Parallel()
	alwaysFail := func(int) int { return http.StatusInternalServerError }

	t.Run("One alert and the dead table", func(t *testing.T) {
		t.Parallel()
		web := newRecordingTarget(t, alwaysFail)
		sink := newAlertSink(t, nil)
		tm := MustRunMain(t, deadConfig(web.URL, sink.URL), "")
		postEvent(t, tm, "evt_d", "order.created", []byte(`{}`), "accepted")
		row := eventRow(t, tm, "shop", "evt_d")
		d := waitStatus(t, tm, row, "web", queue.Dead, 5*time.Second)
		if d.Attempts != 3 || d.LastError != "status 500" {
			t.Errorf("dead delivery attempts=%d last_error=%q, want 3 %q", d.Attempts, d.LastError, "status 500")
		}
		if got := web.Count(); got != 3 {
			t.Errorf("target got %d requests, want 3 (max_attempts)", got)
		}
		waitAlerted(t, tm, row, 5*time.Second)
		alerts, tries := sink.Received()
		if len(alerts) != 1 || tries != 1 {
			t.Fatalf("alert sink got %d alerts in %d requests, want exactly 1", len(alerts), tries)
		}
		a := alerts[0]
		for k, want := range map[string]any{
			"source": "shop", "event_id": "evt_d", "type": "order.created", "target": "web",
			"attempts": float64(3), "error": "status 500",
		} {
			if a[k] != want {
				t.Errorf("alert %s=%v, want %v", k, a[k], want)
			}
		}
		if s, _ := a["dead_at"].(string); s == "" {
			t.Errorf("alert dead_at=%v, want a time", a["dead_at"])
		} else if _, err := time.Parse(time.RFC3339, s); err != nil {
			t.Errorf("alert dead_at=%q: %v", s, err)
		}

		lines := jsonLines[map[string]any](t, cliRun(t, tm.Dir, "dead", "--json"))
		if len(lines) != 1 {
			t.Fatalf("dead --json: %d lines, want 1", len(lines))
		}
		l := lines[0]
		for _, k := range []string{"source", "event_id", "target", "attempts", "error", "dead_at"} {
			if _, ok := l[k]; !ok {
				t.Errorf("dead --json line lacks %q: %v", k, l)
			}
		}
		if l["source"] != "shop" || l["event_id"] != "evt_d" || l["target"] != "web" || l["attempts"] != float64(3) || l["error"] != "status 500" {
			t.Errorf("dead --json line=%v, want shop evt_d web 3 %q", l, "status 500")
		}
		if _, err := time.Parse(time.RFC3339, fmt.Sprint(l["dead_at"])); err != nil {
			t.Errorf("dead_at=%v: %v", l["dead_at"], err)
		}
		if _, err := time.Parse(time.RFC3339, fmt.Sprint(l["alerted_at"])); err != nil {
			t.Errorf("alerted_at=%v: %v; want when the alert went out", l["alerted_at"], err)
		}
		if out := cliRun(t, tm.Dir, "dead"); !regexp.MustCompile(`evt_d\s.*status 500\s+sent\n`).MatchString(out) {
			t.Errorf("dead table:\n%s\nwant evt_d's alert shown as sent", out)
		}

		// Another event going dead must not repeat the first alert.
		postEvent(t, tm, "evt_d2", "order.created", []byte(`{}`), "accepted")
		waitAlerted(t, tm, eventRow(t, tm, "shop", "evt_d2"), 5*time.Second)
		alerts, _ = sink.Received()
		if len(alerts) != 2 || alerts[1]["event_id"] != "evt_d2" {
			t.Errorf("alerts=%v, want evt_d then evt_d2, one each", alerts)
		}
	})

	t.Run("Alert given up shows in dead", func(t *testing.T) {
		t.Parallel()
		web := newRecordingTarget(t, alwaysFail)
		sink := newAlertSink(t, func(int) int { return http.StatusBadGateway })
		tm := MustRunMain(t, deadConfig(web.URL, sink.URL), "", func(m *hookbox.Main) { m.AlertBackoff = 10 * time.Millisecond })
		postEvent(t, tm, "evt_g", "order.created", []byte(`{}`), "accepted")
		row := eventRow(t, tm, "shop", "evt_g")
		waitStatus(t, tm, row, "web", queue.Dead, 5*time.Second)
		waitFor(t, 8*time.Second, "the alerter to give up after 5 tries", func() bool {
			_, tries := sink.Received()
			return tries >= 5
		})
		var l map[string]any
		waitFor(t, 5*time.Second, "the last failure to be recorded", func() bool {
			lines := jsonLines[map[string]any](t, cliRun(t, tm.Dir, "dead", "--json"))
			if len(lines) == 1 {
				l = lines[0]
			}
			return l != nil && l["alert_error"] == "status 502"
		})
		if _, ok := l["alerted_at"]; ok {
			t.Errorf("dead --json line %v has alerted_at for an alert never sent", l)
		}
		time.Sleep(1100 * time.Millisecond) // the alerter looks for due alerts every second
		if _, tries := sink.Received(); tries != 5 {
			t.Errorf("alert tried %d times, want 5 in all", tries)
		}
		if out := cliRun(t, tm.Dir, "dead"); !strings.Contains(out, "gave up: status 502") {
			t.Errorf("dead table:\n%s\nwant the alert shown as given up", out)
		}
		if l := jsonLines[map[string]any](t, cliRun(t, tm.Dir, "dead", "--json")); len(l) != 1 || l[0]["alert"] != "gave up" {
			t.Errorf("dead --json=%v, want one line with alert \"gave up\"", l)
		}
	})

	t.Run("Alert being retried shows in dead", func(t *testing.T) {
		t.Parallel()
		web := newRecordingTarget(t, alwaysFail)
		sink := newAlertSink(t, func(int) int { return http.StatusServiceUnavailable })
		// After its first failure the alert waits an hour: still retried.
		tm := MustRunMain(t, deadConfig(web.URL, sink.URL), "", func(m *hookbox.Main) { m.AlertBackoff = time.Hour })
		postEvent(t, tm, "evt_r", "order.created", []byte(`{}`), "accepted")
		waitStatus(t, tm, eventRow(t, tm, "shop", "evt_r"), "web", queue.Dead, 5*time.Second)
		var l map[string]any
		waitFor(t, 5*time.Second, "the first failed send to be recorded", func() bool {
			lines := jsonLines[map[string]any](t, cliRun(t, tm.Dir, "dead", "--json"))
			if len(lines) == 1 {
				l = lines[0]
			}
			return l != nil && l["alert_error"] == "status 503"
		})
		if l["alert"] != "retrying" {
			t.Errorf("dead --json alert=%v, want \"retrying\"", l["alert"])
		}
		if out := cliRun(t, tm.Dir, "dead"); !strings.Contains(out, "retrying: status 503") {
			t.Errorf("dead table:\n%s\nwant the alert shown as being retried", out)
		}
	})

	t.Run("Failing alert is retried", func(t *testing.T) {
		t.Parallel()
		web := newRecordingTarget(t, alwaysFail)
		sink := newAlertSink(t, failFirst(2))
		tm := MustRunMain(t, deadConfig(web.URL, sink.URL), "", func(m *hookbox.Main) { m.AlertBackoff = 10 * time.Millisecond })
		postEvent(t, tm, "evt_a", "order.created", []byte(`{}`), "accepted")
		row := eventRow(t, tm, "shop", "evt_a")
		waitStatus(t, tm, row, "web", queue.Dead, 5*time.Second)
		dl := waitAlerted(t, tm, row, 8*time.Second)
		alerts, tries := sink.Received()
		if tries != 3 || len(alerts) != 1 {
			t.Errorf("alert sink: %d requests, %d accepted; want 3 requests (2 failed), 1 alert", tries, len(alerts))
		}
		if dl.AlertErr != "" {
			t.Errorf("alert_error=%q after a successful send, want empty", dl.AlertErr)
		}
	})
}

// An alert command gets the alert document on stdin and the dead
// delivery's source, event id and target in its environment.
func TestDelivery_AlertCommand(t *testing.T) {
	web := newRecordingTarget(t, func(int) int { return http.StatusInternalServerError })
	out := filepath.Join(t.TempDir(), "alert.out")
	script := writeTargetScript(t, `{ echo "$HOOKBOX_ALERT_SOURCE|$HOOKBOX_ALERT_EVENT_ID|$HOOKBOX_ALERT_TARGET"; cat; } > `+out+"\n")
	tm := MustRunMain(t, deliveryConfig+`
[alert]
command = ["`+script+`"]

[[target]]
name = "web"
source = "shop"
url = "`+web.URL+`"
max_attempts = 1
`, "")
	postEvent(t, tm, "evt_alert_cmd", "order.created", []byte(`{}`), "accepted")
	var got []byte
	waitFor(t, 5*time.Second, "the alert command's output", func() bool {
		got, _ = os.ReadFile(out)
		_, doc, ok := strings.Cut(string(got), "\n")
		return ok && json.Valid([]byte(doc)) // the whole document, not a part written so far
	})
	first, doc, _ := strings.Cut(string(got), "\n")
	if first != "shop|evt_alert_cmd|web" {
		t.Errorf("alert environment = %q, want shop|evt_alert_cmd|web", first)
	}
	var alert struct {
		EventID string `json:"event_id"`
		Target  string `json:"target"`
	}
	if err := json.Unmarshal([]byte(doc), &alert); err != nil || alert.EventID != "evt_alert_cmd" || alert.Target != "web" {
		t.Errorf("alert document %q (%v), want the dead delivery of evt_alert_cmd to web", doc, err)
	}
}

func TestDelivery_RedeliveryRevivesDead(t *testing.T) {
	var healthy atomic.Bool
	web := newRecordingTarget(t, func(int) int {
		if healthy.Load() {
			return http.StatusOK
		}
		return http.StatusBadGateway
	})
	tm := MustRunMain(t, fmt.Sprintf(`
[delivery]
max_attempts = 2
backoff = "20ms"
max_backoff = "50ms"

[[source]]
name = "shop"
verify = "none"
insecure = true
event_id = "header:X-Id"
event_type = "header:X-Type"

[[target]]
name = "web"
source = "shop"
url = %q
`, web.URL), "")

	postEvent(t, tm, "evt_x", "order.created", []byte(`{}`), "accepted")
	row := eventRow(t, tm, "shop", "evt_x")
	waitStatus(t, tm, row, "web", queue.Dead, 5*time.Second)
	if got := web.Count(); got != 2 {
		t.Fatalf("target got %d requests before dead, want 2", got)
	}

	healthy.Store(true)
	postEvent(t, tm, "evt_x", "order.created", []byte(`{}`), "duplicate")
	// The revival committed with the 200: the delivery is queued again with
	// its attempts reset, or already running or done on attempt 1.
	if d := deliveriesOf(t, tm, row)["web"]; d.Status == queue.Dead || d.Attempts > 1 {
		t.Fatalf("after redelivery: status=%s attempts=%d, want pending with attempts reset", d.Status, d.Attempts)
	}
	d := waitStatus(t, tm, row, "web", queue.Done, 5*time.Second)
	if d.Attempts != 1 {
		t.Errorf("revived delivery done after %d attempts, want 1 (reset)", d.Attempts)
	}
	if got := web.Count(); got != 3 {
		t.Errorf("target got %d requests, want 3 (2 failed, 1 after the revival)", got)
	}
	if lines := jsonLines[map[string]any](t, cliRun(t, tm.Dir, "dead", "--json")); len(lines) != 0 {
		t.Errorf("dead --json=%v after the revival, want none", lines)
	}

	// A redelivery of a done event changes nothing.
	postEvent(t, tm, "evt_x", "order.created", []byte(`{}`), "duplicate")
	if d := deliveriesOf(t, tm, row)["web"]; d.Status != queue.Done || d.Attempts != 1 {
		t.Errorf("after a duplicate of a done event: status=%s attempts=%d, want done 1", d.Status, d.Attempts)
	}
	// Another event makes the pool run; the done one must not come with it.
	postEvent(t, tm, "evt_y", "order.created", []byte(`{}`), "accepted")
	waitStatus(t, tm, eventRow(t, tm, "shop", "evt_y"), "web", queue.Done, 5*time.Second)
	var ids []string
	for _, h := range web.Hits() {
		ids = append(ids, h.Header.Get("Hookbox-Event-Id"))
	}
	if strings.Join(ids, " ") != "evt_x evt_x evt_x evt_y" {
		t.Errorf("target saw %v, want evt_x ×3 then evt_y", ids)
	}
}

func TestDelivery_ConcurrentDuplicatesDeliveredOnce(t *testing.T) {
	web := newRecordingTarget(t, nil)
	web.Delay = 300 * time.Millisecond
	tm := MustRunMain(t, deliveryConfig+`
[[target]]
name = "web"
source = "shop"
url = "`+web.URL+`"
`, "")

	const n = 30
	var wg sync.WaitGroup
	start := make(chan struct{})
	answers := make([]string, n)
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			<-start
			req, _ := http.NewRequest(http.MethodPost, tm.URL+"/hooks/shop", strings.NewReader(`{"id":"evt_c"}`))
			req.Header.Set("X-Id", "evt_c")
			req.Header.Set("X-Type", "order.created")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers[i] = err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			codes[i], answers[i] = resp.StatusCode, string(b)
		})
	}
	close(start)
	wg.Wait()
	accepted := 0
	for i := range n {
		switch {
		case codes[i] != http.StatusOK:
			t.Errorf("post %d: %d %s, want 200", i, codes[i], answers[i])
		case strings.Contains(answers[i], `"accepted"`):
			accepted++
		case !strings.Contains(answers[i], `"duplicate"`):
			t.Errorf("post %d: %s, want accepted or duplicate", i, answers[i])
		}
	}
	if accepted != 1 {
		t.Errorf("%d posts accepted, want exactly 1", accepted)
	}
	row := eventRow(t, tm, "shop", "evt_c")
	d := waitStatus(t, tm, row, "web", queue.Done, 5*time.Second)
	if d.Attempts != 1 {
		t.Errorf("attempts=%d, want 1", d.Attempts)
	}
	if got := web.Count(); got != 1 {
		t.Errorf("target saw the event %d times, want exactly 1", got)
	}
	if e := cliEvent(t, tm.Dir, row); e.Redeliveries != n-1 {
		t.Errorf("redeliveries=%d, want %d", e.Redeliveries, n-1)
	}
}

func TestDelivery_FanOutTypeFilter(t *testing.T) {
	all := newRecordingTarget(t, nil)
	invoices := newRecordingTarget(t, nil)
	tm := MustRunMain(t, deliveryConfig+fmt.Sprintf(`
[[target]]
name = "all"
source = "shop"
url = %q

[[target]]
name = "invoices"
source = "shop"
url = %q
events = ["invoice.*"]
`, all.URL, invoices.URL), "")

	postEvent(t, tm, "evt_inv", "invoice.paid", []byte(`{}`), "accepted")
	postEvent(t, tm, "evt_cus", "customer.created", []byte(`{}`), "accepted")
	inv, cus := eventRow(t, tm, "shop", "evt_inv"), eventRow(t, tm, "shop", "evt_cus")
	waitStatus(t, tm, inv, "all", queue.Done, 5*time.Second)
	waitStatus(t, tm, inv, "invoices", queue.Done, 5*time.Second)
	waitStatus(t, tm, cus, "all", queue.Done, 5*time.Second)

	seen := func(rt *recordingTarget) []string {
		var ids []string
		for _, h := range rt.Hits() {
			ids = append(ids, h.Header.Get("Hookbox-Event-Id"))
		}
		return ids
	}
	if got := seen(invoices); len(got) != 1 || got[0] != "evt_inv" {
		t.Errorf("filtered target saw %v, want [evt_inv]", got)
	}
	if got := seen(all); len(got) != 2 {
		t.Errorf("unfiltered target saw %v, want both events", got)
	}
	lines := jsonLines[view.Event](t, cliRun(t, tm.Dir, "events", "--json"))
	if len(lines) != 2 {
		t.Fatalf("events --json listed %d events, want 2", len(lines))
	}
	for _, e := range lines {
		var targets []string
		for _, d := range e.Deliveries {
			targets = append(targets, d.Target+":"+d.Status)
		}
		want := map[string]string{"evt_inv": "all:done invoices:done", "evt_cus": "all:done"}[e.EventID]
		if got := strings.Join(targets, " "); got != want {
			t.Errorf("events --json %s deliveries=%s, want %s", e.EventID, got, want)
		}
	}
}

func TestDelivery_CommandTimeoutKillsGroup(t *testing.T) {
	out := t.TempDir()
	// A background child that would outlive the script, then a hang.
	script := writeTargetScript(t, `sleep 30 &
echo $! > "$OUT/child.pid"
sleep 30
`)
	tm := MustRunMain(t, deliveryConfig+fmt.Sprintf(`
[[target]]
name = "slow"
source = "shop"
command = [%q]
env = { OUT = %q }
timeout = "300ms"
max_attempts = 1
`, script, out), "")
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(out, "child.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 && !pidGone(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})

	start := time.Now()
	postEvent(t, tm, "evt_t", "order.created", []byte(`{}`), "accepted")
	row := eventRow(t, tm, "shop", "evt_t")
	d := waitStatus(t, tm, row, "slow", queue.Dead, 5*time.Second)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("attempt took %v, want it ended near the 300ms timeout", took)
	}
	if !strings.Contains(d.LastError, "timeout") {
		t.Errorf("last_error=%q, want a timeout", d.LastError)
	}
	child := readPIDFile(t, filepath.Join(out, "child.pid"))
	waitFor(t, 3*time.Second, fmt.Sprintf("background child %d to be killed with its group", child), func() bool {
		return pidGone(child)
	})
	e := cliEvent(t, tm.Dir, row)
	if len(e.Deliveries) != 1 || len(e.Deliveries[0].History) != 1 {
		t.Fatalf("deliveries=%+v, want one with one attempt", e.Deliveries)
	}
	if a := e.Deliveries[0].History[0]; a.Outcome != "failed" || !strings.Contains(a.Error, "timeout") {
		t.Errorf("attempt=%+v, want failed with a timeout error", a)
	}
}

func (p *serveProc) post(tb testing.TB, id string) {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+p.addr+"/hooks/shop", strings.NewReader(`{}`))
	req.Header.Set("X-Id", id)
	req.Header.Set("X-Type", "order.created")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("post: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"accepted"`) {
		tb.Fatalf("post %s: %d %s, want 200 accepted", id, resp.StatusCode, b)
	}
}

// binEvents runs `hookbox events --json --limit 0` (every event, with extra
// flags) with the binary.
func binEvents(tb testing.TB, bin, cfg string, extra ...string) []view.Event {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"events", "--config", cfg, "--json", "--limit", "0"}, extra...)
	out, err := exec.CommandContext(ctx, bin, args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			tb.Fatalf("hookbox %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		tb.Fatalf("hookbox %s: %v", strings.Join(args, " "), err)
	}
	return jsonLines[view.Event](tb, string(out))
}

// binDelivery returns the one delivery of event id as `hookbox events --json` shows it.
func binDelivery(tb testing.TB, bin, cfg, id string) view.Delivery {
	tb.Helper()
	for _, e := range binEvents(tb, bin, cfg) {
		if e.EventID == id {
			if len(e.Deliveries) != 1 {
				tb.Fatalf("event %s deliveries=%+v, want 1", id, e.Deliveries)
			}
			return e.Deliveries[0]
		}
	}
	tb.Fatalf("event %s not listed by hookbox events", id)
	return view.Delivery{}
}

// serveFixture writes a config for a serve child: source "shop", one command
// target running script with OUT set to out.
func serveFixture(tb testing.TB, dir, addr, script, out, extra string) string {
	tb.Helper()
	cfg := filepath.Join(dir, "hookbox.toml")
	text := fmt.Sprintf(`
[server]
listen = %q

[store]
path = %q

[delivery]
workers = 2
backoff = "50ms"
max_backoff = "200ms"
%s

[[source]]
name = "shop"
verify = "none"
insecure = true
event_id = "header:X-Id"
event_type = "header:X-Type"

[[target]]
name = "script"
source = "shop"
command = [%q]
env = { OUT = %q }
timeout = "30s"
`, addr, filepath.Join(dir, "hookbox.db"), extra, script, out)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		tb.Fatal(err)
	}
	return cfg
}

// slowOnceScript records each run ("start ID", "end ID") and sleeps while
// $OUT/slow exists; its pid (and process group) goes to $OUT/pid.
const slowOnceScript = `echo $$ > "$OUT/pid"
echo "start-$HOOKBOX_EVENT_ID" >> "$OUT/runs"
if [ -e "$OUT/slow" ]; then sleep 30; fi
echo "end-$HOOKBOX_EVENT_ID" >> "$OUT/runs"
`

// overlapScript is slowOnceScript that first records "overlap-ID" if the
// run before it (its pid in $OUT/pid) still runs when it starts. A run that
// ended but was not reaped yet (a zombie: its parent was killed, and
// adoption and reaping take a moment) does not count.
const overlapScript = `prev=$(cat "$OUT/pid" 2>/dev/null)
if [ -n "$prev" ] && kill -0 "$prev" 2>/dev/null && ! grep -qs ') Z ' "/proc/$prev/stat"; then echo "overlap-$HOOKBOX_EVENT_ID" >> "$OUT/runs"; fi
` + slowOnceScript

// A SIGKILLed hookbox cannot end the command it was running: at the next
// start hookbox stops that command's process group before it runs the
// delivery again, so the two never overlap.
func TestServe_KillNineDuringDelivery(t *testing.T) {
	bin := buildHookbox(t)
	dir, out := t.TempDir(), t.TempDir()
	script := writeTargetScript(t, overlapScript)
	if err := os.WriteFile(filepath.Join(out, "slow"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cfg := serveFixture(t, dir, addr, script, out, "")

	p := startServe(t, bin, cfg, addr)
	p.post(t, "evt_k")
	waitFor(t, 5*time.Second, "the target to start", func() bool { return len(readFileLines(t, filepath.Join(out, "runs"))) == 1 })
	// The killed process cannot clean up: the sleeping script outlives it.
	orphan := readPIDFile(t, filepath.Join(out, "pid"))
	t.Cleanup(func() { syscall.Kill(-orphan, syscall.SIGKILL) })

	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not die on SIGKILL")
	}
	if d := binDelivery(t, bin, cfg, "evt_k"); d.Status != queue.Running {
		t.Fatalf("after SIGKILL: status=%s, want running (left by the killed process)", d.Status)
	}

	if pidGone(orphan) {
		t.Fatal("the target died with hookbox: nothing left to test")
	}

	os.Remove(filepath.Join(out, "slow"))
	p = startServe(t, bin, cfg, addr)
	var d view.Delivery
	waitFor(t, 8*time.Second, "the delivery to be done after the restart", func() bool {
		d = binDelivery(t, bin, cfg, "evt_k")
		return d.Status == queue.Done
	})
	if d.Attempts != 2 {
		t.Errorf("attempts=%d, want 2 (the interrupted one and the rerun)", d.Attempts)
	}
	want := "start-evt_k start-evt_k end-evt_k"
	if runtime.GOOS != "linux" {
		want = "start-evt_k overlap-evt_k start-evt_k end-evt_k" // finding leftovers needs /proc
	}
	if got := strings.Join(readFileLines(t, filepath.Join(out, "runs")), " "); got != want {
		t.Errorf("target runs=%q, want %q (the first run stopped before the rerun, which ran to its end)", got, want)
	}
	if runtime.GOOS == "linux" {
		if !pidGone(orphan) {
			t.Errorf("the killed hookbox's command (pid %d) still runs after the restart", orphan)
		}
		if !strings.Contains(p.output.String(), "stopping a command left running by the previous process") {
			t.Errorf("the restart did not log the stopped command:\n%s", p.output.String())
		}
	}
}

func TestServe_SIGTERMReleasesRunning(t *testing.T) {
	bin := buildHookbox(t)
	dir, out := t.TempDir(), t.TempDir()
	script := writeTargetScript(t, slowOnceScript)
	if err := os.WriteFile(filepath.Join(out, "slow"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	const grace = 300 * time.Millisecond
	cfg := serveFixture(t, dir, addr, script, out, `grace = "300ms"`)

	p := startServe(t, bin, cfg, addr)
	p.post(t, "evt_s")
	waitFor(t, 5*time.Second, "the target to start", func() bool { return len(readFileLines(t, filepath.Join(out, "runs"))) == 1 })
	script1 := readPIDFile(t, filepath.Join(out, "pid"))
	t.Cleanup(func() { syscall.Kill(-script1, syscall.SIGKILL) })

	p.stop(t, syscall.SIGTERM, grace+2*time.Second) // within the grace, and a margin
	waitFor(t, 3*time.Second, "the interrupted script to be gone", func() bool { return pidGone(script1) })

	d := binDelivery(t, bin, cfg, "evt_s")
	if d.Status == queue.Done || d.Status == queue.Running {
		t.Fatalf("after SIGTERM: status=%s, want released (pending or retrying), not done", d.Status)
	}
	if got := readFileLines(t, filepath.Join(out, "runs")); len(got) != 1 {
		t.Fatalf("runs=%q, want only the interrupted start", got)
	}
	events := binEvents(t, bin, cfg)
	if len(events) != 1 {
		t.Fatalf("%d events stored, want 1", len(events))
	}
	raw, err := exec.Command(bin, "event", "--config", cfg, "--json", strconv.FormatInt(events[0].ID, 10)).Output()
	if err != nil {
		t.Fatalf("hookbox event: %v", err)
	}
	var detail eventDetail
	if err := json.Unmarshal(raw, &detail); err != nil {
		t.Fatalf("decode event --json: %v", err)
	}
	if len(detail.Deliveries) != 1 {
		t.Fatalf("event shows %d deliveries, want 1", len(detail.Deliveries))
	}
	if h := detail.Deliveries[0].History; len(h) != 1 || h[0].Outcome != "interrupted" {
		t.Errorf("attempts after SIGTERM=%+v, want one interrupted", h)
	}

	os.Remove(filepath.Join(out, "slow"))
	startServe(t, bin, cfg, addr)
	waitFor(t, 8*time.Second, "the delivery to be done after the restart", func() bool {
		d = binDelivery(t, bin, cfg, "evt_s")
		return d.Status == queue.Done
	})
	if got, want := strings.Join(readFileLines(t, filepath.Join(out, "runs")), " "), "start-evt_s start-evt_s end-evt_s"; got != want {
		t.Errorf("target runs=%q, want %q", got, want)
	}
}

// SIGTERM while a sender is still uploading: once server.shutdown_timeout
// has passed, its request is cut off (it gets no answer and sends again)
// and hookbox still stops normally, with status 0.
func TestServe_SIGTERMCutsOffASlowUpload(t *testing.T) {
	bin := buildHookbox(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := unsignedServeConfig(t, dir, addr, `shutdown_timeout = "300ms"`, "")
	p := startServe(t, bin, cfg, addr)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A body of 10,000 bytes announced, 100 sent: the handler waits for the rest.
	fmt.Fprintf(conn, "POST /hooks/shop HTTP/1.1\r\nHost: x\r\nX-Id: evt_slow\r\nContent-Length: 10000\r\n\r\n%s", strings.Repeat("a", 100))
	time.Sleep(200 * time.Millisecond)

	p.stop(t, syscall.SIGTERM, 10*time.Second) // a 300 ms shutdown_timeout, and a margin
	out := p.output.String()
	if !strings.Contains(out, "cut off") || !strings.Contains(out, `"message":"stopped"`) {
		t.Errorf("log does not say the upload was cut off and the stop completed:\n%s", out)
	}
	if events := binEvents(t, bin, cfg); len(events) != 0 {
		t.Errorf("%d events stored from an upload that never finished, want 0", len(events))
	}
}

// unsignedServeConfig writes a config for a serve child on addr with its
// store in dir and one unsigned source "shop" (id in X-Id); server lines go
// into [server], rest (targets) after the source.
func unsignedServeConfig(tb testing.TB, dir, addr, server, rest string) string {
	tb.Helper()
	cfg := filepath.Join(dir, "hookbox.toml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `
[server]
listen = %q
%s

[store]
path = %q

[[source]]
name = "shop"
verify = "none"
insecure = true
event_id = "header:X-Id"
%s`, addr, server, filepath.Join(dir, "hookbox.db"), rest), 0o600); err != nil {
		tb.Fatal(err)
	}
	return cfg
}

// A target's answer is shown by `hookbox event` and `hookbox dead` with its
// control characters escaped: an escape sequence in it must not clear the
// operator's screen or retitle the terminal.
func TestCLI_TargetOutputCannotDriveTheTerminal(t *testing.T) {
	hostile := "\x1b[2J\x1b]0;pwned\x07bad"
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, hostile)
	}))
	defer web.Close()
	sink := newAlertSink(t, nil)
	tm := MustRunMain(t, deadConfig(web.URL, sink.URL), "")
	postEvent(t, tm, "evt_esc", "order.created", []byte(`{}`), "accepted")
	row := eventRow(t, tm, "shop", "evt_esc")
	waitStatus(t, tm, row, "web", queue.Dead, 5*time.Second)
	for _, args := range [][]string{{"event", strconv.FormatInt(row, 10)}, {"dead"}} {
		out := cliRun(t, tm.Dir, args...)
		if strings.ContainsAny(out, "\x1b\x07") {
			t.Errorf("hookbox %s prints raw control characters:\n%q", args[0], out)
		}
		if args[0] == "event" && !strings.Contains(out, `\x1b[2J\x1b]0;pwned\x07bad`) {
			t.Errorf("hookbox event:\n%s\nwant the output shown with its control characters escaped", out)
		}
	}
	// --json keeps the bytes (escaped by JSON itself).
	var detail eventDetail
	if err := json.Unmarshal([]byte(cliRun(t, tm.Dir, "event", "--json", strconv.FormatInt(row, 10))), &detail); err != nil {
		t.Fatal(err)
	}
	if h := detail.Deliveries[0].History; len(h) == 0 || h[0].Output != hostile {
		t.Errorf("event --json history %+v, want the output as the target sent it", h)
	}
}
