package main_test

import (
	hookbox "hookbox"

	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/queue"
	"hookbox/web"
)

// webSecret is the Stripe source's secret in the web tests.
const webSecret = "whsec_web_test"

// webConfig is a config with an unsigned source "shop" (event id and type
// in headers), a Stripe source, and a URL target "web" for both that
// gives up after two attempts.
func webConfig(targetURL string) string {
	return fmt.Sprintf(`
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
order_key = "header:X-Key"

[[source]]
name = "stripe"
verify = "stripe"
secret = %q

[[target]]
name = "web"
sources = ["shop", "stripe"]
url = %q
`, webSecret, targetURL)
}

// webServer is a running hookbox with its web handler served on a
// loopback port of its own, and the target it delivers to.
type webServer struct {
	*testMain
	UI     string        // the handler's base URL
	Store  web.Store     // the store, whichever engine
	Fail   *atomic.Bool  // the target answers 500 while set
	Calls  *atomic.Int64 // requests the target got
	Target string
}

func startWeb(tb testing.TB, opts ...func(*hookbox.Main)) *webServer {
	tb.Helper()
	return startWebWith(tb, "", opts...)
}

// startWebWith is startWeb with more config text after webConfig's.
func startWebWith(tb testing.TB, extra string, opts ...func(*hookbox.Main)) *webServer {
	tb.Helper()
	ws := &webServer{Fail: &atomic.Bool{}, Calls: &atomic.Int64{}}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws.Calls.Add(1)
		io.Copy(io.Discard, r.Body)
		if ws.Fail.Load() {
			http.Error(w, "target says no", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	tb.Cleanup(target.Close)
	ws.Target = target.URL
	ws.testMain = MustRunMain(tb, webConfig(target.URL)+extra, "", opts...)
	ws.Store = ws.DB
	if ws.PG != nil {
		ws.Store = ws.PG
	}
	h := ws.WebHandler()
	ui := httptest.NewServer(h)
	tb.Cleanup(func() { h.Shutdown(); ui.Close() })
	ws.UI = ui.URL
	return ws
}

// shop posts an event of the unsigned source.
func (ws *webServer) shop(tb testing.TB, id, typ string, body string, headers ...string) int64 {
	tb.Helper()
	h := map[string]string{"X-Id": id, "X-Type": typ, "Content-Type": "application/json"}
	for i := 0; i+1 < len(headers); i += 2 {
		h[headers[i]] = headers[i+1]
	}
	status, answer := ws.Post("/hooks/shop", h, []byte(body))
	if status != http.StatusOK || !strings.Contains(answer, "accepted") {
		tb.Fatalf("post %s: %d %s, want 200 accepted", id, status, answer)
	}
	return ws.newest(tb)
}

// newest is the number of the newest stored event.
func (ws *webServer) newest(tb testing.TB) int64 {
	tb.Helper()
	var p web.Page
	ws.getJSON(tb, "/api/events?limit=1", http.StatusOK, &p)
	if len(p.Events) == 0 {
		tb.Fatal("no events stored")
	}
	return p.Events[0].ID
}

func (ws *webServer) get(tb testing.TB, path string) (int, http.Header, string) {
	tb.Helper()
	resp, err := http.Get(ws.UI + path)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func (ws *webServer) getJSON(tb testing.TB, path string, wantStatus int, v any) {
	tb.Helper()
	status, h, body := ws.get(tb, path)
	if status != wantStatus {
		tb.Fatalf("GET %s: %d %s, want %d", path, status, body, wantStatus)
	}
	if ct := h.Get("Content-Type"); ct != "application/json" {
		tb.Fatalf("GET %s: Content-Type %q, want application/json", path, ct)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		tb.Fatalf("GET %s: %v in %s", path, err, body)
	}
}

func (ws *webServer) postReplay(tb testing.TB, body string, headers ...string) (int, map[string]any) {
	tb.Helper()
	req, _ := http.NewRequest(http.MethodPost, ws.UI+"/api/replay", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil {
		tb.Fatalf("POST /api/replay %s: %d, not JSON: %q", body, resp.StatusCode, b)
	}
	return resp.StatusCode, out
}

// attempts is how many attempts the store holds for event's deliveries.
func (ws *webServer) attempts(tb testing.TB, event int64) int {
	tb.Helper()
	ctx := context.Background()
	ds, err := ws.Store.Deliveries(ctx, []int64{event})
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, d := range ds[event] {
		as, err := ws.Store.Attempts(ctx, d.ID)
		if err != nil {
			tb.Fatal(err)
		}
		n += len(as)
	}
	return n
}

func (ws *webServer) waitStatus(tb testing.TB, event int64, status string) {
	tb.Helper()
	waitFor(tb, 10*time.Second, "event "+strconv.FormatInt(event, 10)+" "+status, func() bool {
		ds, err := ws.Store.Deliveries(context.Background(), []int64{event})
		return err == nil && len(ds[event]) == 1 && ds[event][0].Status == status
	})
}

// onEngines runs test on a SQLite store and, with HOOKBOX_TEST_POSTGRES,
// on a PostgreSQL schema of its own.
func onEngines(t *testing.T, test func(t *testing.T, opts ...func(*hookbox.Main))) {
	t.Run("SQLite", func(t *testing.T) { test(t) })
	t.Run("PostgreSQL", func(t *testing.T) {
		url := postgresSchema(t)
		test(t, func(m *hookbox.Main) { m.Config.Store.URL, m.Config.Store.Path = url, "" })
	})
}

// A stored event is shown as text wherever it appears: markup or a
// javascript: URL in its id, type, header or body never becomes an
// element or a link on any page.
func TestWeb_Escaping(t *testing.T) {
	ws := startWeb(t)
	const evil = `<script>alert(1)</script>`
	id := ws.shop(t, `evt_`+evil, `javascript:alert(2)`, `{"note":"`+strings.ReplaceAll(evil, `/`, `\/`)+`","link":"javascript:alert(3)","<img src=x onerror=alert(4)>":1}`,
		"X-Evil", evil, "Referer", "javascript:alert(5)", "X-Key", `javascript:alert(6)`+evil)
	ws.waitStatus(t, id, queue.Done)
	for _, path := range []string{"/", "/?q=" + "evt_", fmt.Sprintf("/events/%d", id), fmt.Sprintf("/events/%d/curl?url=http://127.0.0.1:1/", id), "/dead", "/health"} {
		status, h, page := ws.get(t, path)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d", path, status)
		}
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("GET %s: Content-Security-Policy %q, want script-src 'self' and nothing inline", path, csp)
		}
		for _, bad := range []string{"<script>alert", "<img src=x", `href="javascript:`, `src="javascript:`, "onerror=alert(4)>"} {
			if strings.Contains(page, bad) {
				t.Errorf("GET %s: the page holds %q unescaped", path, bad)
			}
		}
		if strings.Count(page, "<script") != 1 || !strings.Contains(page, `<script src="/assets/app.js" defer></script>`) {
			t.Errorf("GET %s: want exactly one script element, the app's own", path)
		}
	}
	_, _, detail := ws.get(t, fmt.Sprintf("/events/%d", id))
	if !strings.Contains(detail, `id="signature"><span class="warn">none: the source checks nothing`) {
		t.Errorf("detail page of an unsigned source's event does not say it was not verified")
	}
	for _, want := range []string{"evt_&lt;script&gt;alert(1)&lt;/script&gt;", "javascript:alert(2)", "&lt;img src=x onerror=alert(4)&gt;", "X-Evil",
		`id="order-key"><a href="/?key=javascript%3aalert%286%29%3cscript%3e`, "javascript:alert(6)&lt;script&gt;"} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail page lacks %q shown as text", want)
		}
	}
	status, _, body := ws.get(t, fmt.Sprintf("/api/events/%d", id))
	if status != http.StatusOK || strings.Contains(body, "<script") || !strings.Contains(body, `\u003cscript\u003e`) {
		t.Errorf("API detail: %d, want the markup escaped as \\u003c in JSON: %s", status, body)
	}
}

// A body that is not UTF-8 is shown as a hex dump, and the raw body is
// a download, never a page.
func TestWeb_BinaryBody(t *testing.T) {
	ws := startWeb(t)
	id := ws.shop(t, "evt_bin", "blob", "\x00\xff<script>\x01")
	_, _, page := ws.get(t, fmt.Sprintf("/events/%d", id))
	if !strings.Contains(page, `id="body-hex"`) || !strings.Contains(page, "00 ff 3c 73 63 72 69 70") {
		t.Errorf("detail page does not dump the binary body as hex")
	}
	status, h, raw := ws.get(t, fmt.Sprintf("/api/events/%d/body", id))
	if status != http.StatusOK || raw != "\x00\xff<script>\x01" || h.Get("Content-Type") != "application/octet-stream" || !strings.HasPrefix(h.Get("Content-Disposition"), "attachment") {
		t.Errorf("raw body: %d %q %v, want the bytes exactly as an octet-stream attachment", status, raw, h)
	}
	var d web.Detail
	ws.getJSON(t, fmt.Sprintf("/api/events/%d", id), http.StatusOK, &d)
	if d.Body != nil || d.BodyBase64 != "AP88c2NyaXB0PgE=" {
		t.Errorf("API detail of a binary body: body=%v body_base64=%q, want only base64", d.Body, d.BodyBase64)
	}
}

// The event list filters, pages by cursor, and names the parameter of
// every bad input.
func TestWebAPI_Events(t *testing.T) { onEngines(t, testWebAPI_Events) }

func testWebAPI_Events(t *testing.T, opts ...func(*hookbox.Main)) {
	ws := startWeb(t, opts...)
	var ids []int64
	for i, e := range []struct{ id, typ string }{
		{"ord_1", "orders/create"}, {"ord_2", "orders/paid"}, {"cus_3", "customers/create"}, {"ord_4", "orders/create"}, {"ord_5", "orders/create"},
	} {
		ids = append(ids, ws.shop(t, e.id, e.typ, fmt.Sprintf(`{"n":%d}`, i), "X-Key", "res_"+e.id[:3]))
	}
	ws.waitStatus(t, ids[4], queue.Done)
	ws.Fail.Store(true)
	dead := ws.shop(t, "ord_6", "orders/paid", `{}`)
	ws.waitStatus(t, dead, queue.Dead)
	list := func(query string) []string {
		t.Helper()
		var p web.Page
		ws.getJSON(t, "/api/events?"+query, http.StatusOK, &p)
		var out []string
		for _, e := range p.Events {
			out = append(out, e.EventID)
		}
		return out
	}
	for q, want := range map[string]string{
		"":                             "ord_6 ord_5 ord_4 cus_3 ord_2 ord_1",
		"type=orders/create":           "ord_5 ord_4 ord_1",
		"q=ord_":                       "ord_6 ord_5 ord_4 ord_2 ord_1",
		"q=4":                          "ord_4",
		"status=dead":                  "ord_6",
		"status=done&type=orders/paid": "ord_2",
		"source=stripe":                "",
		"since=1h":                     "ord_6 ord_5 ord_4 cus_3 ord_2 ord_1",
		"until=1h":                     "",
		"key=res_cus":                  "cus_3",
		"key=res_ord&type=orders/paid": "ord_2",
		"key=nosuch":                   "",
	} {
		if got := strings.Join(list(q), " "); got != want {
			t.Errorf("GET /api/events?%s: %q, want %q", q, got, want)
		}
	}
	// Pages of two, by cursor, newest first, the last with no next.
	var seen []string
	cursor := ""
	for pages := 0; ; pages++ {
		var p web.Page
		ws.getJSON(t, "/api/events?limit=2&cursor="+cursor, http.StatusOK, &p)
		for _, e := range p.Events {
			seen = append(seen, e.EventID)
			if e.Deliveries == nil || len(e.Deliveries) != 1 || e.Deliveries[0].Target != "web" {
				t.Errorf("event %s: deliveries %+v, want the one to web", e.EventID, e.Deliveries)
			}
		}
		if p.Next == "" {
			if pages != 2 {
				t.Errorf("%d pages of 2 for 6 events, want 3", pages+1)
			}
			break
		}
		cursor = p.Next
	}
	if got := strings.Join(seen, " "); got != "ord_6 ord_5 ord_4 cus_3 ord_2 ord_1" {
		t.Errorf("paged: %q, want every event once, newest first", got)
	}
	for query, field := range map[string]string{
		"status=bogus": "status", "limit=0": "limit", "limit=501": "limit", "limit=x": "limit", "cursor=abc": "cursor",
		"since=yesterday": "since", "until=soon": "until", "since=1h&until=2h": "until",
	} {
		var e struct{ Error, Field string }
		ws.getJSON(t, "/api/events?"+query, http.StatusBadRequest, &e)
		if e.Field != field || !strings.HasPrefix(e.Error, field+":") {
			t.Errorf("GET /api/events?%s: %+v, want a 400 naming %s", query, e, field)
		}
	}
	// The list page answers the same mistakes on the page, 400.
	if status, _, page := ws.get(t, "/?status=bogus"); status != http.StatusBadRequest || !strings.Contains(page, "status: &#34;bogus&#34;") {
		t.Errorf("list page with a bad status: %d, want 400 saying so", status)
	}
	for _, path := range []string{"/api/events/abc", "/api/events/0", "/events/x"} {
		if status, _, _ := ws.get(t, path); status != http.StatusBadRequest {
			t.Errorf("GET %s: %d, want 400", path, status)
		}
	}
	for _, path := range []string{"/api/events/999999", "/events/999999", "/api/nosuch"} {
		if status, _, _ := ws.get(t, path); status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, status)
		}
	}
}

// One event in full: headers as stored, the body, each delivery with
// every attempt.
func TestWebAPI_Event(t *testing.T) {
	ws := startWeb(t)
	ws.Fail.Store(true)
	id := ws.shop(t, "evt_full", "orders/create", `{"a":[1,2,{"b":"c"}]}`, "X-Shop-Note", "hello")
	ws.waitStatus(t, id, queue.Dead)
	var d web.Detail
	ws.getJSON(t, fmt.Sprintf("/api/events/%d", id), http.StatusOK, &d)
	if d.EventID != "evt_full" || d.Type != "orders/create" || d.Headers["X-Shop-Note"][0] != "hello" || d.Body == nil || *d.Body != `{"a":[1,2,{"b":"c"}]}` {
		t.Fatalf("API detail: %+v, want the event with its header and body as stored", d)
	}
	if len(d.Deliveries) != 1 || d.Deliveries[0].Status != "dead" || len(d.Deliveries[0].History) != 2 || d.Deliveries[0].History[0].HTTPStatus != 500 {
		t.Fatalf("API detail deliveries: %+v, want one dead after 2 attempts of HTTP 500", d.Deliveries)
	}
	// The page: facts, headers, the folded tree, attempts.
	_, _, page := ws.get(t, fmt.Sprintf("/events/%d", id))
	for _, want := range []string{"X-Shop-Note", "hello", `id="body-tree"`, `<span class="k">b</span>: <span class="v v-string">&#34;c&#34;</span>`, "HTTP 500", "target says no"} {
		if !strings.Contains(page, want) {
			t.Errorf("detail page lacks %q", want)
		}
	}
	// A diff against another event by number, or one that is not there.
	other := ws.shop(t, "evt_other", "orders/create", `{"a":[1,2,{"b":"d"}]}`)
	if _, _, page := ws.get(t, fmt.Sprintf("/events/%d?against=%d", other, id)); !strings.Contains(page, `<span class="d del">-       &#34;b&#34;: &#34;c&#34;</span>`) ||
		!strings.Contains(page, `<span class="d add">&#43;       &#34;b&#34;: &#34;d&#34;</span>`) {
		t.Errorf("the diff against event %d lacks the changed line:\n%s", id, page[strings.Index(page, "<pre class=\"diff\""):])
	}
	if status, _, page := ws.get(t, fmt.Sprintf("/events/%d?against=999999", other)); status != http.StatusOK || !strings.Contains(page, "event 999999: event not found") {
		t.Errorf("a diff against an unknown event: %d, want the page saying so", status)
	}
	var dl struct{ Dead []map[string]any }
	ws.getJSON(t, "/api/dead", http.StatusOK, &dl)
	if len(dl.Dead) != 1 || dl.Dead[0]["event_id"] != "evt_full" || dl.Dead[0]["target"] != "web" || dl.Dead[0]["attempts"] != float64(2) {
		t.Errorf("GET /api/dead: %+v, want evt_full's delivery to web after 2 attempts", dl.Dead)
	}
	if _, _, page := ws.get(t, "/dead"); !strings.Contains(page, "evt_full") || !strings.Contains(page, "status 500") {
		t.Errorf("dead-letter page lacks the dead letter or its error: %s", page)
	}
}

// POST /api/replay runs the replay of hookbox replay: a new attempt in
// the store; its mistakes are 400s naming the field.
func TestWebAPI_Replay(t *testing.T) { onEngines(t, testWebAPI_Replay) }

func testWebAPI_Replay(t *testing.T, opts ...func(*hookbox.Main)) {
	ws := startWeb(t, opts...)
	ws.Fail.Store(true)
	id := ws.shop(t, "evt_r", "orders/create", `{}`)
	ws.waitStatus(t, id, queue.Dead)
	if n := ws.attempts(t, id); n != 2 {
		t.Fatalf("attempts=%d before the replay, want 2", n)
	}
	ws.Fail.Store(false)
	status, out := ws.postReplay(t, fmt.Sprintf(`{"event":%d,"dead":true}`, id))
	if status != http.StatusOK || out["queued"] != float64(1) {
		t.Fatalf("replay: %d %v, want 1 queued", status, out)
	}
	if msgs, _ := out["messages"].([]any); len(msgs) == 0 || !strings.HasPrefix(msgs[0].(string), "1 delivery queued again") {
		t.Errorf("replay messages %v, want hookbox replay's sentence", out["messages"])
	}
	ws.waitStatus(t, id, queue.Done)
	if n := ws.attempts(t, id); n != 3 {
		t.Errorf("attempts=%d after the replay, want 3", n)
	}
	for body, field := range map[string]string{
		`{}`:                          "event",
		`{"event":-1}`:                "event",
		`{"event":"1"}`:               "event",
		`{"evnt":1}`:                  "evnt",
		`{"since":"whenever"}`:        "since",
		`{"since":"1h","until":"2h"}`: "until",
		fmt.Sprintf(`{"event":%d,"target":"nosuch"}`, id): "target",
		`[1]`: "",
		``:    "",
	} {
		status, out := ws.postReplay(t, body)
		if status != http.StatusBadRequest || out["field"] != nil && out["field"] != field || field != "" && out["field"] != field {
			t.Errorf("replay %s: %d %v, want 400 naming %q", body, status, out, field)
		}
	}
	if status, out := ws.postReplay(t, `{"event":999999}`); status != http.StatusNotFound || !strings.Contains(out["error"].(string), "event 999999: event not found") {
		t.Errorf("replay of an unknown event: %d %v, want 404", status, out)
	}
	if status, _ := ws.postReplay(t, fmt.Sprintf(`{"event":%d}`, id), "Sec-Fetch-Site", "cross-site"); status != http.StatusForbidden {
		t.Errorf("replay from another site: %d, want 403", status)
	}
	if status, _ := ws.postReplay(t, fmt.Sprintf(`{"event":%d}`, id), "Origin", "http://evil.example"); status != http.StatusForbidden {
		t.Errorf("replay from another origin: %d, want 403", status)
	}
	resp, err := http.Post(ws.UI+"/api/replay", "application/x-www-form-urlencoded", strings.NewReader("event=1"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("replay as a form: %d, want 415", resp.StatusCode)
	}
	if n := ws.attempts(t, id); n != 3 {
		t.Errorf("attempts=%d after refused replays, want still 3", n)
	}
}

// Copy as curl on a Stripe event signs afresh: the command, run, is
// accepted by hookbox's own Stripe source (as a duplicate: the same
// event, a valid signature).
func TestWeb_CopyAsCurl(t *testing.T) {
	ws := startWeb(t)
	body := []byte(`{"id":"evt_curl","type":"invoice.paid","note":"it's"}`)
	status, answer := ws.Post("/hooks/stripe", map[string]string{"Stripe-Signature": stripeSig(webSecret, time.Now(), body), "Content-Type": "application/json"}, body)
	if status != http.StatusOK {
		t.Fatalf("post: %d %s", status, answer)
	}
	id := ws.newest(t)
	if _, _, page := ws.get(t, fmt.Sprintf("/events/%d", id)); !strings.Contains(page, `id="signature">verified with stripe before it was stored`) {
		t.Errorf("the event page does not say the signature was verified with stripe")
	}
	var c web.Curl
	ws.getJSON(t, fmt.Sprintf("/api/events/%d/curl?url=%s/hooks/stripe", id, ws.URL), http.StatusOK, &c)
	if !c.Signed || len(c.Warnings) != 0 {
		t.Fatalf("curl: signed=%v warnings=%v, want signed afresh without warning", c.Signed, c.Warnings)
	}
	out, err := exec.Command("sh", "-c", c.Command).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"status":"duplicate"`) {
		t.Fatalf("running %s:\n%s %v, want hookbox to accept the signature (duplicate)", c.Command, out, err)
	}
	// An unsigned source's command carries the stored headers, with the
	// warning that a signature there is the original.
	sid := ws.shop(t, "evt_plain", "x", `{}`, "X-Signature", "sig-at-receipt", "X-Note", "kept")
	ws.getJSON(t, fmt.Sprintf("/api/events/%d/curl?url=http://127.0.0.1:1/x", sid), http.StatusOK, &c)
	if c.Signed || !strings.Contains(c.Command, `-H 'X-Note: kept'`) || !strings.Contains(c.Command, `-H 'X-Id: evt_plain'`) || strings.Contains(c.Command, "X-Signature") {
		t.Errorf("curl of an unsigned source: %+v, want the stored headers but the credential", c)
	}
	if len(c.Warnings) != 1 || !strings.HasPrefix(c.Warnings[0], "X-Signature was not stored") {
		t.Errorf("curl warnings %q, want one saying X-Signature (a credential) was not stored", c.Warnings)
	}
	var e struct{ Error, Field string }
	ws.getJSON(t, fmt.Sprintf("/api/events/%d/curl?url=javascript:alert(1)", sid), http.StatusBadRequest, &e)
	if e.Field != "url" {
		t.Errorf("curl to a javascript: URL: %+v, want a 400 naming url", e)
	}
}

// The live tail streams each event stored after the one given, as it
// arrives, with the filters of the list.
func TestWeb_Tail(t *testing.T) {
	ws := startWeb(t)
	first := ws.shop(t, "evt_before", "a", `{}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/api/tail?after=%d&type=b", ws.UI, first), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("tail: Content-Type %q", ct)
	}
	ws.shop(t, "evt_other_type", "a", `{}`)
	ws.shop(t, "evt_after", "b", `{}`)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var ev struct {
				EventID string `json:"event_id"`
			}
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatal(err)
			}
			if ev.EventID != "evt_after" {
				t.Fatalf("tail sent %s, want only evt_after (the filter keeps type b, after evt_before)", ev.EventID)
			}
			// Sent again as its delivery moves on, until it is done.
			if strings.Contains(data, `"status":"done"`) {
				return
			}
		}
	}
	t.Fatalf("tail ended without evt_after done: %v", sc.Err())
}

// Only an IP address or localhost is served: a name made to resolve to
// the loopback listener (DNS rebinding) reads nothing.
func TestWeb_Host(t *testing.T) {
	ws := startWeb(t)
	ws.shop(t, "evt_host", "x", `{}`)
	for host, want := range map[string]int{
		"127.0.0.1:8081": http.StatusOK, "localhost:8081": http.StatusOK, "[::1]:8081": http.StatusOK, "app.localhost": http.StatusOK,
		"evil.example:8081": http.StatusMisdirectedRequest, "127.0.0.1.evil.example": http.StatusMisdirectedRequest,
	} {
		for _, path := range []string{"/", "/api/events"} {
			req, _ := http.NewRequest(http.MethodGet, ws.UI+path, nil)
			req.Host = host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want || want != http.StatusOK && strings.Contains(string(b), "evt_host") {
				t.Errorf("GET %s with Host %s: %d, want %d", path, host, resp.StatusCode, want)
			}
		}
	}
	h := web.New(ws.Store, web.Options{AnyHost: true})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "http://hooks.example.com/api/events", nil)
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "evt_host") {
		t.Errorf("AnyHost: %d, want the events for any name", rec.Code)
	}
}
