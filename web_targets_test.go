package main_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	hookbox "hookbox"
	"hookbox/queue"
	"hookbox/web"
)

// postTarget posts to /api/targets/{name}/{verb} and decodes the answer.
func (ws *webServer) postTarget(tb testing.TB, name, verb string, headers ...string) (int, map[string]any) {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodPost, ws.UI+"/api/targets/"+name+"/"+verb, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		tb.Fatalf("POST %s %s: %d, not JSON: %q", name, verb, resp.StatusCode, b)
	}
	return resp.StatusCode, out
}

func TestWebAPI_PauseResume(t *testing.T) { onEngines(t, testWebAPI_PauseResume) }

// Pausing through the API holds a running serve's deliveries as `hookbox
// pause` does (no attempt spent), GET /api/targets says so, and resuming
// delivers them.
func testWebAPI_PauseResume(t *testing.T, opts ...func(*hookbox.Main)) {
	ws := startWeb(t, opts...)
	status, out := ws.postTarget(t, "web", "pause")
	if status != http.StatusOK || out["paused"] != true || out["already"] != false {
		t.Fatalf("pause: %d %v, want 200 paused", status, out)
	}
	var ts struct{ Targets []web.TargetState }
	ws.getJSON(t, "/api/targets", http.StatusOK, &ts)
	if len(ts.Targets) != 1 || !ts.Targets[0].Paused || ts.Targets[0].PausedSince == nil {
		t.Fatalf("targets after the pause: %+v, want web paused", ts.Targets)
	}

	id := ws.shop(t, "evt_paused", "orders/create", `{}`)
	ws.waitStatus(t, id, queue.Paused)
	time.Sleep(300 * time.Millisecond) // a pool that ignored the pause would have run it by now
	if n := ws.attempts(t, id); n != 0 || ws.Calls.Load() != 0 {
		t.Fatalf("paused target: %d attempts, %d calls, want none", n, ws.Calls.Load())
	}
	if status, out := ws.postTarget(t, "web", "pause"); status != http.StatusOK || out["already"] != true {
		t.Errorf("pause again: %d %v, want already paused", status, out)
	}

	status, out = ws.postTarget(t, "web", "resume")
	if status != http.StatusOK || out["paused"] != false || out["deliveries"] != float64(1) {
		t.Fatalf("resume: %d %v, want 1 delivery released", status, out)
	}
	ws.waitStatus(t, id, queue.Done)
	ws.getJSON(t, "/api/targets", http.StatusOK, &ts)
	if ts.Targets[0].Paused {
		t.Errorf("targets after the resume: %+v, want web not paused", ts.Targets)
	}

	if status, out := ws.postTarget(t, "nosuch", "pause"); status != http.StatusNotFound || !strings.Contains(out["error"].(string), "its targets: web") {
		t.Errorf("pause of an unknown target: %d %v, want 404 naming the targets", status, out)
	}
	if status, _ := ws.postTarget(t, "web", "pause", "Sec-Fetch-Site", "cross-site"); status != http.StatusForbidden {
		t.Errorf("pause from another site: %d, want 403", status)
	}
	if status, _ := ws.postTarget(t, "web", "pause", "Origin", "http://evil.example"); status != http.StatusForbidden {
		t.Errorf("pause from another origin: %d, want 403", status)
	}
	ws.getJSON(t, "/api/targets", http.StatusOK, &ts)
	if ts.Targets[0].Paused {
		t.Errorf("a refused pause paused the target: %+v", ts.Targets)
	}
}

func TestWebAPI_Lanes(t *testing.T) { onEngines(t, testWebAPI_Lanes) }

// GET /api/lanes lists an ordered target's lanes as `hookbox lanes --json`
// does, pages by cursor, and with blocked=1 those held (here: by a pause).
func testWebAPI_Lanes(t *testing.T, opts ...func(*hookbox.Main)) {
	ws := startWebWith(t, "order = \"fifo\"\n", opts...)
	if status, _ := ws.postTarget(t, "web", "pause"); status != http.StatusOK {
		t.Fatalf("pause: %d", status)
	}
	a1 := ws.shop(t, "a1", "orders/updated", `{}`, "X-Key", "res_a")
	ws.shop(t, "a2", "orders/updated", `{}`, "X-Key", "res_a")
	b1 := ws.shop(t, "b1", "orders/updated", `{}`, "X-Key", "res_b")

	var p web.LanesPage
	ws.getJSON(t, "/api/lanes", http.StatusOK, &p)
	if len(p.Lanes) != 2 || p.Next != "" {
		t.Fatalf("lanes %+v next %q, want res_a and res_b, one page", p.Lanes, p.Next)
	}
	a, b := p.Lanes[0], p.Lanes[1]
	if a.Target != "web" || a.Key != "res_a" || a.HeadEvent != a1 || a.Queued != 1 || a.HeadStatus != queue.Paused || a.BlockedSince == "" {
		t.Errorf("lane res_a %+v, want head event %d paused, one waiting, blocked since the pause", a, a1)
	}
	if b.Key != "res_b" || b.HeadEvent != b1 || b.Queued != 0 {
		t.Errorf("lane res_b %+v, want head event %d, none waiting", b, b1)
	}
	ws.getJSON(t, "/api/lanes?blocked=1&limit=1", http.StatusOK, &p)
	if len(p.Lanes) != 1 || p.Lanes[0].Key != "res_a" || p.Next == "" {
		t.Fatalf("first page of one: %+v next %q, want res_a and a cursor", p.Lanes, p.Next)
	}
	ws.getJSON(t, "/api/lanes?blocked=1&limit=1&cursor="+p.Next, http.StatusOK, &p)
	if len(p.Lanes) != 1 || p.Lanes[0].Key != "res_b" {
		t.Fatalf("second page: %+v, want res_b", p.Lanes)
	}
	for query, field := range map[string]string{"blocked=maybe": "blocked", "limit=0": "limit", "cursor=nope": "cursor"} {
		var e struct{ Error, Field string }
		ws.getJSON(t, "/api/lanes?"+query, http.StatusBadRequest, &e)
		if e.Field != field {
			t.Errorf("GET /api/lanes?%s: %+v, want a 400 naming %s", query, e, field)
		}
	}
	// Resumed, the lanes run: nothing blocked, nothing waiting.
	ws.postTarget(t, "web", "resume")
	waitFor(t, 10*time.Second, "the lanes drained", func() bool {
		var p web.LanesPage
		ws.getJSON(t, "/api/lanes", http.StatusOK, &p)
		return len(p.Lanes) == 2 && p.Lanes[0].HeadEvent == 0 && p.Lanes[1].HeadEvent == 0 && p.Lanes[0].LastVersion == "" && p.Lanes[0].LastEvent != 0
	})
}
