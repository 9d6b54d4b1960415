package main_test

import (
	hookbox "hookbox"

	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"hookbox/health"
)

// testClock is a clock a test moves by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock {
	return &testClock{t: time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// withClock runs hookbox on c, with failed alerts retried after 20ms.
func withClock(c *testClock) func(*hookbox.Main) {
	return func(m *hookbox.Main) {
		m.Now = c.Now
		m.AlertBackoff = 20 * time.Millisecond
	}
}

// healthSink is an [alert] URL that keeps every alert it accepted; while
// failing is set it answers 500 and keeps nothing.
type healthSink struct {
	*httptest.Server
	failing atomic.Bool
	mu      sync.Mutex
	alerts  []map[string]any
	refused int
}

func newHealthSink(tb testing.TB) *healthSink {
	s := &healthSink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a map[string]any
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.failing.Load() {
			if a["kind"] != "dead" {
				s.refused++
			}
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		s.alerts = append(s.alerts, a)
	}))
	tb.Cleanup(s.Close)
	return s
}

// alarms returns the accepted alerts of health alarms (not dead letters),
// as "kind state subject".
func (s *healthSink) alarms() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, a := range s.alerts {
		if a["kind"] == "dead" {
			continue
		}
		subject := a["source"]
		if subject == nil {
			subject = a["target"]
		}
		out = append(out, fmt.Sprintf("%v %v %v", a["kind"], a["state"], subject))
	}
	return out
}

// last returns the last accepted alert of kind.
func (s *healthSink) last(kind string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.alerts) - 1; i >= 0; i-- {
		if s.alerts[i]["kind"] == kind {
			return s.alerts[i]
		}
	}
	return nil
}

// waitAlarms waits until the health alerts received are want, then
// watches for a few more checks that nothing else comes. Alarms changed by
// one check may come in either order (an engine test holds each alarm's
// own order: firing before resolved).
func (s *healthSink) waitAlarms(tb testing.TB, want ...string) {
	tb.Helper()
	sorted := func(l []string) string { l = slices.Clone(l); slices.Sort(l); return strings.Join(l, "; ") }
	same := func() bool { return sorted(s.alarms()) == sorted(want) }
	waitFor(tb, 10*time.Second, fmt.Sprintf("health alerts %q (got %q)", want, s.alarms()), func() bool {
		if got := s.alarms(); len(got) > len(want) {
			tb.Fatalf("health alerts %q, want %q", got, want)
		}
		return same()
	})
	time.Sleep(200 * time.Millisecond) // four checks at 50ms
	if !same() {
		tb.Fatalf("health alerts %q, want only %q", s.alarms(), want)
	}
}

// healthConfig is a config checking the alarms every 50ms, alerting to
// sink, with a source "shop" (ids in X-Id) and the extra TOML given; extra
// may start with more [health] keys.
func healthConfig(sink string, extra string) string {
	return fmt.Sprintf(`
[delivery]
max_attempts = 1
lease = "1h"

[alert]
url = %q

[[source]]
name = "shop"
verify = "none"
insecure = true
event_id = "header:X-Id"

[health]
interval = "50ms"
`, sink) + extra
}

func postID(tb testing.TB, tm *testMain, source, id string) string {
	tb.Helper()
	code, body := tm.Post("/hooks/"+source, map[string]string{"X-Id": id}, []byte(`{"id":"`+id+`"}`))
	if code != http.StatusOK {
		tb.Fatalf("post %s to %s: %d %s", id, source, code, body)
	}
	var a struct{ Status string }
	json.Unmarshal([]byte(body), &a)
	return a.Status
}

func alarmStatus(tb testing.TB, tm *testMain, kind, subject string) health.AlarmStatus {
	tb.Helper()
	st, err := tm.Health.Status(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	for _, a := range st.Alarms {
		if a.Alarm == kind && (a.Source == subject || a.Target == subject) {
			return a
		}
	}
	tb.Fatalf("status has no %s alarm of %s: %+v", kind, subject, st.Alarms)
	return health.AlarmStatus{}
}

// A slow target makes a provider that resends what it did not see handled
// in time send everything twice: the duplicate rate fires once, stays
// quiet while it holds, and resolves once the window has passed. A source
// with 1 duplicate of 2 requests is below the minimum volume.
func TestHealth_DuplicateSpike(t *testing.T) {
	t.Parallel()
	sink := newHealthSink(t)
	var handled sync.Map
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(100 * time.Millisecond)
		handled.Store(r.Header.Get("Hookbox-Event-Id"), true)
	}))
	t.Cleanup(slow.Close)
	clock := newTestClock()
	tm := MustRunMain(t, healthConfig(sink.URL, fmt.Sprintf(`
min_volume = 20

[[source]]
name = "small"
verify = "none"
insecure = true
event_id = "header:X-Id"

[[target]]
name = "slow"
source = "shop"
url = %q
`, slow.URL)), "", withClock(clock))

	// The provider: each event, then again if it was not handled within
	// its 30ms timeout, as a provider resends an answer that came late.
	resent := 0
	for i := range 30 {
		id := fmt.Sprintf("evt_%d", i)
		if got := postID(t, tm, "shop", id); got != "accepted" {
			t.Fatalf("first send of %s: %s, want accepted", id, got)
		}
		time.Sleep(30 * time.Millisecond)
		if _, ok := handled.Load(id); !ok {
			if got := postID(t, tm, "shop", id); got != "duplicate" {
				t.Fatalf("resend of %s: %s, want duplicate", id, got)
			}
			resent++
		}
	}
	if resent < 10 {
		t.Fatalf("the provider resent %d of 30 events; the slow target should have made it resend most", resent)
	}
	postID(t, tm, "small", "s1")
	postID(t, tm, "small", "s1")
	sink.waitAlarms(t, "duplicate_rate firing shop")
	a := sink.last("duplicate_rate")
	// Fired by a check during the spike: its value is the rate then, at
	// most one half (each event was resent at most once).
	if v, _ := a["value"].(float64); v <= 0.2 || v > 0.5 || a["bound"] != 0.2 || a["unit"] != "ratio" {
		t.Errorf("alert %v, want a value above the bound 0.2 and at most 0.5, unit ratio", a)
	}
	for _, k := range []string{"since", "at"} {
		if s, _ := a[k].(string); !strings.HasPrefix(s, "2026-06-01T09:00:00") {
			t.Errorf("alert %s=%v, want the test clock's time", k, a[k])
		}
	}
	if m, _ := a["message"].(string); !strings.Contains(m, "shop") || !strings.Contains(m, "resending") {
		t.Errorf("alert message %q, want it to name the source and say the provider is resending", m)
	}
	rate := float64(resent) / float64(30+resent)
	if s := alarmStatus(t, tm, health.DuplicateRate, "shop"); !s.Firing || s.Since == nil || s.Value != rate {
		t.Errorf("status of shop's duplicate rate %+v, want firing with a since, at %v (%d resent of 30)", s, rate, resent)
	}
	if s := alarmStatus(t, tm, health.DuplicateRate, "small"); s.Firing || s.Value != 0.5 {
		t.Errorf("status of small's duplicate rate %+v, want 0.5 and not firing (2 requests < min_volume)", s)
	}

	// More resends while it holds: no second alert.
	postID(t, tm, "shop", "evt_0")
	sink.waitAlarms(t, "duplicate_rate firing shop")

	clock.Add(11 * time.Minute) // the spike leaves the window
	sink.waitAlarms(t, "duplicate_rate firing shop", "duplicate_rate resolved shop")
	if a := sink.last("duplicate_rate"); a["value"] != 0.0 || !strings.HasPrefix(fmt.Sprint(a["since"]), "2026-06-01T09:00:") ||
		!strings.HasPrefix(fmt.Sprint(a["at"]), "2026-06-01T09:11:") {
		t.Errorf("resolved alert %v, want value 0, since the firing, at the clock's 09:11", a)
	}
}

// A target whose attempt hangs: its oldest queued delivery fires after
// oldest_queued and resolves when it is done; its receive-to-done p99
// then fires, and resolves once the slow delivery leaves the window.
func TestHealth_OldestQueuedAndLatency(t *testing.T) {
	t.Parallel()
	sink := newHealthSink(t)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
	}))
	t.Cleanup(target.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	clock := newTestClock()
	tm := MustRunMain(t, healthConfig(sink.URL, fmt.Sprintf(`
[[target]]
name = "hang"
source = "shop"
url = %q
timeout = "50m"
`, target.URL)), "", withClock(clock))
	postID(t, tm, "shop", "evt_1")
	<-started
	clock.Add(9 * time.Minute)
	time.Sleep(200 * time.Millisecond)
	if got := sink.alarms(); len(got) != 0 {
		t.Fatalf("alerts %q at 9 minutes, want none (oldest_queued is 10m)", got)
	}
	clock.Add(2 * time.Minute)
	sink.waitAlarms(t, "oldest_queued firing hang")
	if a := sink.last("oldest_queued"); a["value"] != 660.0 || a["bound"] != 600.0 || a["unit"] != "seconds" || a["target"] != "hang" {
		t.Errorf("alert %v, want 660 of 600 seconds, target hang", a)
	}
	if s := alarmStatus(t, tm, health.OldestQueued, "hang"); !s.Firing || s.Value != 660 {
		t.Errorf("status %+v, want firing at 660", s)
	}

	close(release) // done at 11 minutes after its receipt
	sink.waitAlarms(t, "oldest_queued firing hang", "oldest_queued resolved hang", "receive_to_done firing hang")
	if a := sink.last("receive_to_done"); a["value"] != 660.0 || a["bound"] != 300.0 {
		t.Errorf("alert %v, want a p99 of 660 seconds over a bound of 300", a)
	}
	st, err := tm.Health.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Targets) != 1 || st.Targets[0].Done != 1 || st.Targets[0].P99Seconds != 660 || st.Targets[0].P50Seconds != 660 || st.Targets[0].Queued != 0 {
		t.Errorf("target figures %+v, want 1 done, p50 = p99 = 660s, none queued", st.Targets)
	}

	clock.Add(11 * time.Minute) // the slow delivery leaves the window
	sink.waitAlarms(t, "oldest_queued firing hang", "oldest_queued resolved hang", "receive_to_done firing hang", "receive_to_done resolved hang")
}

// target_failing fires on the Nth failed attempt in a row, not again on
// the next, and resolves on a success.
func TestHealth_TargetFailing(t *testing.T) {
	t.Parallel()
	sink := newHealthSink(t)
	var ok atomic.Bool
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ok.Load() {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(target.Close)
	clock := newTestClock()
	tm := MustRunMain(t, healthConfig(sink.URL, fmt.Sprintf(`target_failing = 3

[[target]]
name = "web"
source = "shop"
url = %q
`, target.URL)), "", withClock(clock))
	for _, id := range []string{"e1", "e2"} {
		postID(t, tm, "shop", id)
		waitStatus(t, tm, eventRow(t, tm, "shop", id), "web", "dead", 5*time.Second)
	}
	time.Sleep(200 * time.Millisecond)
	if got := sink.alarms(); len(got) != 0 {
		t.Fatalf("alerts %q after 2 failures, want none (target_failing = 3)", got)
	}
	postID(t, tm, "shop", "e3")
	sink.waitAlarms(t, "target_failing firing web")
	if a := sink.last("target_failing"); a["value"] != 3.0 || a["bound"] != 3.0 || a["unit"] != "attempts" {
		t.Errorf("alert %v, want 3 of 3 attempts", a)
	}
	postID(t, tm, "shop", "e4")
	waitStatus(t, tm, eventRow(t, tm, "shop", "e4"), "web", "dead", 5*time.Second)
	sink.waitAlarms(t, "target_failing firing web")
	if s := alarmStatus(t, tm, health.TargetFailing, "web"); !s.Firing || s.Value != 4 {
		t.Errorf("status %+v, want firing at 4", s)
	}

	ok.Store(true)
	postID(t, tm, "shop", "e5")
	sink.waitAlarms(t, "target_failing firing web", "target_failing resolved web")
	if a := sink.last("dead"); a == nil || a["state"] != "firing" || a["target"] != "web" {
		t.Errorf("the dead letters' alerts %v, want kind dead, state firing, beside the alarms", a)
	}
	// The metrics count the alarm's two sends beside the dead letters'.
	if body := scrape(t, tm.AdminURL); !strings.Contains(body, `hookbox_alerts_total{kind="target_failing",outcome="sent"} 2`) {
		t.Errorf("metrics lack the alarm's sends:\n%s", grepLines(body, "hookbox_alerts_total"))
	}
}

// grepLines is the lines of text that hold s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A source with silence fires when nothing came for that long, measured
// from serve's start when nothing ever came, and resolves on an event;
// after it, silence is measured from the last event.
func TestHealth_Silence(t *testing.T) {
	t.Parallel()
	sink := newHealthSink(t)
	clock := newTestClock()
	cfg := strings.Replace(healthConfig(sink.URL, ""), `event_id = "header:X-Id"`, `event_id = "header:X-Id"
silence = "1h"`, 1)
	tm := MustRunMain(t, cfg, "", withClock(clock))
	clock.Add(59 * time.Minute)
	time.Sleep(200 * time.Millisecond)
	if got := sink.alarms(); len(got) != 0 {
		t.Fatalf("alerts %q after 59 minutes, want none", got)
	}
	clock.Add(time.Minute)
	sink.waitAlarms(t, "silence firing shop")
	if a := sink.last("silence"); a["value"] != 3600.0 || a["bound"] != 3600.0 || a["source"] != "shop" {
		t.Errorf("alert %v, want 3600 of 3600 seconds, source shop", a)
	}
	postID(t, tm, "shop", "e1")
	sink.waitAlarms(t, "silence firing shop", "silence resolved shop")
	clock.Add(59 * time.Minute)
	sink.waitAlarms(t, "silence firing shop", "silence resolved shop")
	st, err := tm.Health.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Sources) != 1 || st.Sources[0].LastEvent == nil || !st.Sources[0].LastEvent.Equal(clock.Now().Add(-59*time.Minute)) {
		t.Errorf("source figures %+v, want shop's last event 59 minutes ago", st.Sources)
	}
}

// A firing alarm survives a restart: the new serve does not send it
// again, and sends its resolution once.
func TestHealth_FiringSurvivesRestart(t *testing.T) {
	t.Parallel()
	sink := newHealthSink(t)
	clock := newTestClock()
	cfg := strings.Replace(healthConfig(sink.URL, ""), `event_id = "header:X-Id"`, `event_id = "header:X-Id"
silence = "1h"`, 1)
	tm := MustRunMain(t, cfg, "", withClock(clock))
	firedAt := clock.Now().Add(2 * time.Hour)
	clock.Add(2 * time.Hour)
	sink.waitAlarms(t, "silence firing shop")
	if err := tm.Close(); err != nil {
		t.Fatal(err)
	}

	clock.Add(time.Hour)
	tm = MustRunMain(t, cfg, tm.Dir, withClock(clock))
	sink.waitAlarms(t, "silence firing shop") // not sent again
	if s := alarmStatus(t, tm, health.Silence, "shop"); !s.Firing || s.Since == nil || !s.Since.Equal(firedAt) {
		t.Errorf("status after the restart %+v, want firing since %s", s, firedAt)
	}
	postID(t, tm, "shop", "e1")
	sink.waitAlarms(t, "silence firing shop", "silence resolved shop")
	if a := sink.last("silence"); !strings.HasPrefix(fmt.Sprint(a["since"]), firedAt.Format("2006-01-02T15:04")) {
		t.Errorf("resolved alert %v, want since %s, when it fired before the restart", a, firedAt)
	}
}

// An alarm whose alert could not be sent yet when serve was killed is
// sent after the restart, once.
func TestHealth_DueAtKillSentAfterRestart(t *testing.T) {
	t.Parallel()
	bin := buildHookbox(t)
	dir := t.TempDir()
	sink := newHealthSink(t)
	sink.failing.Store(true)
	addr := freeAddr(t)
	cfg := filepath.Join(dir, "hookbox.toml")
	writeFile(t, cfg, fmt.Sprintf(`
[server]
listen = %q

[store]
path = %q

[delivery]
max_attempts = 1

[alert]
url = %q

[health]
interval = "100ms"
target_failing = 2

[[source]]
name = "shop"
verify = "none"
insecure = true
event_id = "header:X-Id"

[[target]]
name = "down"
source = "shop"
url = "http://%s/"
`, addr, filepath.Join(dir, "hookbox.db"), sink.URL, freeAddr(t)))
	p := startServe(t, bin, cfg, addr)
	for _, id := range []string{"e1", "e2"} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/hooks/shop", bytes.NewReader([]byte(`{}`)))
		req.Header.Set("X-Id", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("post %s: %v %v", id, resp, err)
		}
		resp.Body.Close()
	}
	waitFor(t, 10*time.Second, "the alarm's first, refused, alert", func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return sink.refused > 0
	})
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	if got := sink.alarms(); len(got) != 0 {
		t.Fatalf("alerts %q accepted before the kill, want none", got)
	}

	sink.failing.Store(false)
	p = startServe(t, bin, cfg, addr)
	waitFor(t, 20*time.Second, "the alarm's alert after the restart", func() bool { return len(sink.alarms()) > 0 })
	time.Sleep(time.Second) // ten checks
	if got := sink.alarms(); strings.Join(got, "; ") != "target_failing firing down" {
		t.Fatalf("alerts after the restart %q, want the firing once", got)
	}
	p.stop(t, syscall.SIGTERM, 10*time.Second)
	if out := p.output.String(); strings.Contains(out, `"level":"error"`) && !strings.Contains(out, "alert") {
		t.Errorf("serve logged errors:\n%s", out)
	}
}

// An alert command gets each alarm's document on stdin, with its kind,
// state and source in the environment.
func TestHealth_AlertCommand(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "alerts.out")
	script := writeTargetScript(t, `{ echo "$HOOKBOX_ALERT_KIND|$HOOKBOX_ALERT_STATE|$HOOKBOX_ALERT_SOURCE|$HOOKBOX_ALERT_TARGET"; cat; echo; } >> `+out+"\n")
	clock := newTestClock()
	cfg := strings.Replace(healthConfig("http://127.0.0.1:1/", ""), `url = "http://127.0.0.1:1/"`, `command = ["`+script+`"]`, 1)
	cfg = strings.Replace(cfg, `event_id = "header:X-Id"`, `event_id = "header:X-Id"
silence = "30m"`, 1)
	tm := MustRunMain(t, cfg, "", withClock(clock))
	clock.Add(31 * time.Minute)
	read := func() []string {
		b, _ := os.ReadFile(out)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	waitFor(t, 10*time.Second, "the firing alert's two lines", func() bool { return len(read()) >= 2 })
	postID(t, tm, "shop", "e1")
	waitFor(t, 10*time.Second, "the resolved alert's two lines", func() bool { return len(read()) >= 4 })
	lines := read()
	if lines[0] != "silence|firing|shop|" || lines[2] != "silence|resolved|shop|" {
		t.Errorf("alert environments %q and %q, want silence|firing|shop| then silence|resolved|shop|", lines[0], lines[2])
	}
	var doc struct {
		Kind, State, Source string
		Value, Bound        float64
	}
	if err := json.Unmarshal([]byte(lines[1]), &doc); err != nil || doc.Kind != "silence" || doc.State != "firing" ||
		doc.Source != "shop" || doc.Value != 1860 || doc.Bound != 1800 {
		t.Errorf("alert document %q (%v), want shop's silence firing at 1860 of 1800 seconds", lines[1], err)
	}
}

// On PostgreSQL: target_failing fires once, is not sent again by the next
// serve, and resolves once on a success.
func TestHealth_PostgresFiresOnceAcrossRestart(t *testing.T) {
	dbURL := postgresSchema(t)
	sink := newHealthSink(t)
	var ok atomic.Bool
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ok.Load() {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(target.Close)
	clock := newTestClock()
	cfg := fmt.Sprintf("[store]\nurl = %q\n", dbURL) + healthConfig(sink.URL, fmt.Sprintf(`target_failing = 2

[[target]]
name = "web"
source = "shop"
url = %q
`, target.URL))
	tm := MustRunMain(t, cfg, "", withClock(clock))
	postID(t, tm, "shop", "e1")
	postID(t, tm, "shop", "e2")
	sink.waitAlarms(t, "target_failing firing web")
	if err := tm.Close(); err != nil {
		t.Fatal(err)
	}
	tm = MustRunMain(t, cfg, tm.Dir, withClock(clock))
	sink.waitAlarms(t, "target_failing firing web")
	ok.Store(true)
	postID(t, tm, "shop", "e3")
	sink.waitAlarms(t, "target_failing firing web", "target_failing resolved web")
}
