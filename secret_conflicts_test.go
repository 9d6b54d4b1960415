package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// secretsConfig is a real serve's config: a GitHub source whose secret is
// a rotation of three, an unsigned one, and the admin listener (the UI and
// the API) on loopback.
func secretsConfig(t *testing.T, dir, addr, admin string) string {
	t.Helper()
	cfg := filepath.Join(dir, "hookbox.toml")
	writeFile(t, cfg, fmt.Sprintf(`
[server]
listen = %q

[store]
path = %q

[admin]
listen = %q

[[source]]
name = "github"
verify = "github"
secret = ["gh-old-secret", "gh-new-secret", "gh-next-secret"]

[[source]]
name = "shop"
verify = "none"
insecure = true
event_id = "header:X-Id"
`, addr, filepath.Join(dir, "hookbox.db"), admin))
	return cfg
}

// httpDo sends a request and returns the answer's status and body.
func httpDo(t *testing.T, method, url string, headers map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// postGitHubSigned posts body as GitHub delivery id, signed with secret.
func postGitHubSigned(t *testing.T, addr, id, secret, body string) string {
	t.Helper()
	code, answer := httpDo(t, http.MethodPost, "http://"+addr+"/hooks/github", map[string]string{
		"Content-Type": "application/json", "X-GitHub-Event": "push", "X-GitHub-Delivery": id,
		"X-Hub-Signature-256": githubSig(secret, []byte(body)),
	}, body)
	if code != http.StatusOK {
		t.Fatalf("post %s: %d %s", id, code, answer)
	}
	return answer
}

// eventNumber is the row number of the event with provider id id.
func eventNumber(t *testing.T, dir, id string) int64 {
	t.Helper()
	for _, e := range jsonLines[struct {
		ID      int64  `json:"id"`
		EventID string `json:"event_id"`
	}](t, cliRun(t, dir, "events", "--json")) {
		if e.EventID == id {
			return e.ID
		}
	}
	t.Fatalf("no event %s in hookbox events", id)
	return 0
}

// A real serve, a GitHub source rotating three secrets: an event signed
// with the second says "secret 2 of 3" in hookbox event, its JSON, the API
// and the page; a redelivery signed with the third keeps the first's; an
// unsigned source's event says nothing of a secret.
func TestServe_WhichSecretVerified(t *testing.T) {
	bin := buildHookbox(t)
	dir := t.TempDir()
	addr, admin := freeAddr(t), freeAddr(t)
	startServe(t, bin, secretsConfig(t, dir, addr, admin), addr)

	body := `{"ref":"refs/heads/main"}`
	postGitHubSigned(t, addr, "d-rotated", "gh-new-secret", body)
	if answer := postGitHubSigned(t, addr, "d-rotated", "gh-next-secret", body); !strings.Contains(answer, "duplicate") {
		t.Fatalf("redelivery: %s, want duplicate", answer)
	}
	n := eventNumber(t, dir, "d-rotated")

	out := cliRun(t, dir, "event", fmt.Sprint(n))
	if !strings.Contains(out, "verified by:  secret 2 of 3\n") {
		t.Errorf("hookbox event says no %q:\n%s", "verified by:  secret 2 of 3", out)
	}
	var d struct {
		Secret  int `json:"secret"`
		Secrets int `json:"secrets"`
	}
	if err := json.Unmarshal([]byte(cliRun(t, dir, "event", "--json", fmt.Sprint(n))), &d); err != nil || d.Secret != 2 || d.Secrets != 3 {
		t.Errorf("hookbox event --json: %+v, %v; want secret 2, secrets 3", d, err)
	}
	code, api := httpDo(t, http.MethodGet, fmt.Sprintf("http://%s/api/events/%d", admin, n), nil, "")
	d = struct {
		Secret  int `json:"secret"`
		Secrets int `json:"secrets"`
	}{}
	if err := json.Unmarshal([]byte(api), &d); code != http.StatusOK || err != nil || d.Secret != 2 || d.Secrets != 3 {
		t.Errorf("GET /api/events/%d: %d %+v %v; want secret 2 of 3\n%s", n, code, d, err, api)
	}
	code, page := httpDo(t, http.MethodGet, fmt.Sprintf("http://%s/events/%d", admin, n), nil, "")
	if code != http.StatusOK || !strings.Contains(page, `by <strong id="secret">secret 2 of 3</strong> (a rotation)`) {
		t.Errorf("GET /events/%d: %d, no secret 2 of 3:\n%s", n, code, page)
	}

	if code, answer := httpDo(t, http.MethodPost, "http://"+addr+"/hooks/shop", map[string]string{"X-Id": "open-1"}, `{}`); code != http.StatusOK {
		t.Fatalf("unsigned post: %d %s", code, answer)
	}
	open := eventNumber(t, dir, "open-1")
	if out := cliRun(t, dir, "event", fmt.Sprint(open)); strings.Contains(out, "verified by") || strings.Contains(out, "secret") {
		t.Errorf("an unsigned event names a secret:\n%s", out)
	}
	if out := cliRun(t, dir, "event", "--json", fmt.Sprint(open)); strings.Contains(out, `"secret`) {
		t.Errorf("an unsigned event's JSON names a secret: %s", out)
	}
}

// A real serve: the same GitHub delivery posted again with another body
// (one holding markup) is kept as a conflict, which hookbox event, the API
// and the page list with its time and size; the page diffs it against the
// body kept, showing the markup as text.
func TestServe_ConflictDiff(t *testing.T) {
	bin := buildHookbox(t)
	dir := t.TempDir()
	addr, admin := freeAddr(t), freeAddr(t)
	startServe(t, bin, secretsConfig(t, dir, addr, admin), addr)

	first := "{\"action\":\"opened\",\"n\":1}"
	second := "{\"action\":\"<script>alert(1)</script>\",\"n\":1}"
	postGitHubSigned(t, addr, "d-conflict", "gh-old-secret", first)
	postGitHubSigned(t, addr, "d-conflict", "gh-old-secret", first) // a plain redelivery: no conflict
	postGitHubSigned(t, addr, "d-conflict", "gh-old-secret", second)
	n := eventNumber(t, dir, "d-conflict")

	out := cliRun(t, dir, "event", fmt.Sprint(n))
	if !strings.Contains(out, "2 redeliveries") && !strings.Contains(out, "redeliveries: 2") {
		t.Errorf("hookbox event does not count 2 redeliveries:\n%s", out)
	}
	if !strings.Contains(out, "conflicts: copies with another body") || !strings.Contains(out, fmt.Sprintf(": %d bytes (application/json)", len(second))) ||
		strings.Count(out, "bytes (application/json)") != 2 {
		t.Errorf("hookbox event does not list the one conflicting copy of %d bytes:\n%s", len(second), out)
	}

	code, api := httpDo(t, http.MethodGet, fmt.Sprintf("http://%s/api/events/%d", admin, n), nil, "")
	var d struct {
		Body           string `json:"body"`
		Conflicts      int    `json:"conflicts"`
		ConflictCopies []struct {
			ReceivedAt string              `json:"received_at"`
			BodySize   int                 `json:"body_size"`
			Body       string              `json:"body"`
			Headers    map[string][]string `json:"headers"`
		} `json:"conflict_copies"`
	}
	if err := json.Unmarshal([]byte(api), &d); code != http.StatusOK || err != nil {
		t.Fatalf("GET /api/events/%d: %d %v\n%s", n, code, err, api)
	}
	if d.Body != first || d.Conflicts != 1 || len(d.ConflictCopies) != 1 {
		t.Fatalf("API: body %q, %d conflicts, %d copies; want the first body and one copy\n%s", d.Body, d.Conflicts, len(d.ConflictCopies), api)
	}
	if c := d.ConflictCopies[0]; c.Body != second || c.BodySize != len(second) || c.ReceivedAt == "" ||
		c.Headers["X-Github-Delivery"][0] != "d-conflict" || c.Headers["X-Hub-Signature-256"][0] != "[redacted]" {
		t.Errorf("API copy %+v, want the second body, its size, time and headers (the signature redacted)", c)
	}

	code, page := httpDo(t, http.MethodGet, fmt.Sprintf("http://%s/events/%d", admin, n), nil, "")
	if code != http.StatusOK {
		t.Fatalf("GET /events/%d: %d\n%s", n, code, page)
	}
	i := strings.Index(page, `<section id="conflicts">`)
	if i < 0 {
		t.Fatalf("the page has no conflicts section:\n%s", page)
	}
	sec := page[i:]
	sec = sec[:strings.Index(sec, "</section>")]
	// As html/template writes text.
	esc := strings.NewReplacer(`"`, "&#34;", "+", "&#43;", "<", "&lt;", ">", "&gt;").Replace
	for _, want := range []string{
		`<span class="d del">` + esc(`-   "action": "opened",`) + `</span>`,
		`<span class="d add">` + esc(`+   "action": "<script>alert(1)</script>",`) + `</span>`,
		`<span class="d">` + esc(`    "n": 1`) + `</span>`,
		fmt.Sprintf("%d bytes, application/json", len(second)),
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("the conflicts section lacks %q:\n%s", want, sec)
		}
	}
	if strings.Contains(page, "<script>alert(1)") {
		t.Errorf("the conflicting body's markup reached the page unescaped")
	}

	// A third body: one copy is diffed on a view, the newest, and the
	// other is offered a link (a diff of long bodies costs; five a view
	// would cost five times that).
	third := "{\"action\":\"closed\",\"n\":1}"
	postGitHubSigned(t, addr, "d-conflict", "gh-old-secret", third)
	section := func(query string) string {
		t.Helper()
		code, page := httpDo(t, http.MethodGet, fmt.Sprintf("http://%s/events/%d%s", admin, n, query), nil, "")
		i := strings.Index(page, `<section id="conflicts">`)
		if code != http.StatusOK || i < 0 {
			t.Fatalf("GET /events/%d%s: %d\n%s", n, query, code, page)
		}
		sec := page[i:]
		return sec[:strings.Index(sec, "</section>")]
	}
	sec = section("")
	if strings.Count(sec, `class="diff conflict-diff"`) != 1 || !strings.Contains(sec, esc(`+   "action": "closed",`)) ||
		!strings.Contains(sec, fmt.Sprintf(`href="/events/%d?conflict=0#conflict-0"`, n)) {
		t.Errorf("with two copies the section should diff the newest and link the other:\n%s", sec)
	}
	sec = section("?conflict=0")
	if strings.Count(sec, `class="diff conflict-diff"`) != 1 || !strings.Contains(sec, esc(`+   "action": "<script>alert(1)</script>",`)) ||
		!strings.Contains(sec, fmt.Sprintf(`href="/events/%d?conflict=1#conflict-1"`, n)) {
		t.Errorf("?conflict=0 should diff the older copy and link the newest:\n%s", sec)
	}
}
