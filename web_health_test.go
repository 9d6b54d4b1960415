package main_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"hookbox/queue"
	"hookbox/web"
)

// GET /api/health and the health page show a failing target's alarm
// firing, its failures in a row and its queue, and a paused target as
// paused; the page's text is the store's, escaped.
func TestWebAPI_Health(t *testing.T) {
	ws := startWebWith(t, "\n[health]\ntarget_failing = 2\ninterval = \"50ms\"\n")
	ws.Fail.Store(true)
	id := ws.shop(t, "evt_h1", "orders/create", `{}`)
	ws.waitStatus(t, id, queue.Dead)

	var a web.HealthAnswer
	waitFor(t, 10*time.Second, "the target_failing alarm firing", func() bool {
		ws.getJSON(t, "/api/health", http.StatusOK, &a)
		for _, al := range a.Alarms {
			if al.Alarm == "target_failing" && al.Target == "web" && al.Firing {
				return true
			}
		}
		return false
	})
	var web1 *struct{ failures int }
	for _, tg := range a.Targets {
		if tg.Name == "web" {
			web1 = &struct{ failures int }{tg.ConsecutiveFailures}
		}
	}
	if web1 == nil || web1.failures < 2 {
		t.Fatalf("targets %+v, want web with 2 failures in a row", a.Targets)
	}
	if len(a.Sources) != 2 {
		t.Errorf("sources %+v, want shop and stripe", a.Sources)
	}

	status, _, page := ws.get(t, "/health")
	if status != http.StatusOK {
		t.Fatalf("GET /health: %d", status)
	}
	for _, want := range []string{"target_failing", "target web", "failing ×2", `id="health-targets"`, "<svg class=\"chart\""} {
		if !strings.Contains(page, want) {
			t.Errorf("health page lacks %q", want)
		}
	}
	// Times as every page writes them, for the browser to show in its zone.
	times := regexp.MustCompile(`<time datetime="([^"]*)"`).FindAllStringSubmatch(page, -1)
	if len(times) < 2 {
		t.Errorf("health page has %d times, want the measurement's and the alarm's", len(times))
	}
	for _, m := range times {
		if _, err := time.Parse(time.RFC3339, m[1]); err != nil {
			t.Errorf("health page time %q is not RFC 3339", m[1])
		}
	}

	if status, _ := ws.postTarget(t, "web", "pause"); status != http.StatusOK {
		t.Fatalf("pause: %d", status)
	}
	ws.getJSON(t, "/api/health", http.StatusOK, &a)
	if len(a.Paused) != 1 || a.Paused[0].Name != "web" {
		t.Errorf("paused %+v, want web", a.Paused)
	}
	_, _, page = ws.get(t, "/health")
	if !strings.Contains(page, `<span class="badge st-paused">paused</span>`) || !strings.Contains(page, `data-verb="resume"`) {
		t.Errorf("health page does not show web paused with a Resume button")
	}
}
