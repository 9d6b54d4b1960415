package main_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// adminConfig is a config whose admin listener is at admin, with extra
// appended to its [admin] table.
func adminConfig(t *testing.T, dir, listen, admin, extra string) string {
	t.Helper()
	p := filepath.Join(dir, "hookbox.toml")
	writeFile(t, p, fmt.Sprintf(`
[server]
listen = %q

[store]
path = %q

[admin]
listen = %q
%s

[[source]]
name = "shop"
verify = "none"
insecure = true
event_id = "header:X-Id"
`, listen, filepath.Join(dir, "hookbox.db"), admin, extra))
	return p
}

// TestAdmin_TokenRequiredOffLoopback: an admin listener beyond loopback
// without token_env is refused before anything starts, naming the key.
func TestAdmin_TokenRequiredOffLoopback(t *testing.T) {
	dir := t.TempDir()
	cfg := adminConfig(t, dir, freeAddr(t), "0.0.0.0:0", "")
	_, stderr, err := execute([]string{"serve", "--config", cfg}, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error()+stderr, "admin.token_env") {
		t.Fatalf("serve with [admin] listen 0.0.0.0 and no token_env: err %v, stderr %q; want a refusal naming admin.token_env", err, stderr)
	}
	// Named but empty: the variable is named, never a value.
	cfg = adminConfig(t, dir, freeAddr(t), "0.0.0.0:0", `token_env = "HOOKBOX_ADMIN_TOKEN"`)
	_, stderr, err = execute([]string{"serve", "--config", cfg}, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error()+stderr, "HOOKBOX_ADMIN_TOKEN is unset or empty") {
		t.Fatalf("serve with token_env unset: err %v, stderr %q; want it to say HOOKBOX_ADMIN_TOKEN is unset", err, stderr)
	}
}

// TestAdmin_Token runs a real serve with its admin listener on all
// interfaces and a token: every admin request without the token gets 401
// and nothing else, with it the metrics; the token never shows in the
// logs, and the webhook listener serves no admin route.
func TestAdmin_Token(t *testing.T) {
	const token = "tok-Zq9f2mX1-never-in-logs"
	bin := buildHookbox(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(freeAddr(t))
	cfg := adminConfig(t, dir, addr, "0.0.0.0:"+port, `token_env = "HOOKBOX_ADMIN_TOKEN"`)
	out := &syncBuffer{}
	p := launchServeWith(t, "", addr, out, out, []string{"HOOKBOX_ADMIN_TOKEN=" + token},
		bin, "serve", "--config", cfg, "--log-format", "json", "--log-level", "debug")
	adminURL := "http://127.0.0.1:" + port

	get := func(base, path, auth string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, auth := range []string{"", "Bearer wrong", "Bearer " + token[:len(token)-1], "Basic " + token} {
		for _, path := range []string{"/metrics", "/", "/api/events"} {
			code, body := get(adminURL, path, auth)
			if code != http.StatusUnauthorized || body != "unauthorized\n" {
				t.Errorf("GET %s with %q: %d %q, want 401 and nothing else", path, auth, code, body)
			}
		}
	}
	code, body := get(adminURL, "/metrics", "Bearer "+token)
	if code != http.StatusOK || !strings.Contains(body, "hookbox_received_total") {
		t.Errorf("GET /metrics with the token: %d, want 200 and the metrics:\n%s", code, body)
	}
	// The UI and the API, behind the same token, for any Host (a proxy
	// forwards its own name).
	if code, body := get(adminURL, "/", "Bearer "+token); code != http.StatusOK || !strings.Contains(body, "<title>Events · hookbox</title>") {
		t.Errorf("GET / with the token: %d, want the event list page", code)
	}
	if code, body := get(adminURL, "/api/events", "Bearer "+token); code != http.StatusOK || !strings.Contains(body, `"events":`) {
		t.Errorf("GET /api/events with the token: %d %q, want the events", code, body)
	}
	// The webhook listener: no metrics, whatever the token.
	if code, _ := get("http://"+addr, "/metrics", "Bearer "+token); code != http.StatusNotFound {
		t.Errorf("GET /metrics on the webhook listener: %d, want 404", code)
	}
	// A webhook carrying the token in its headers stores it redacted and
	// logs nothing of it either.
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/hooks/shop", strings.NewReader(`{}`))
	req.Header.Set("X-Id", "e1")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	p.stop(t, syscall.SIGTERM, 20*time.Second)
	if strings.Contains(out.String(), token) || strings.Contains(out.String(), token[:8]) {
		t.Errorf("the admin token appears in serve's output:\n%s", out.String())
	}
	if !strings.Contains(out.String(), `"admin":"http://[::]:`+port+`"`) {
		t.Errorf("the start line does not say where the admin listener is:\n%s", out.String())
	}
}
