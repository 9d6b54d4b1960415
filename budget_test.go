package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	hookbox "hookbox"
)

// readyz GETs base/readyz and returns the status and the reason given.
func readyz(t *testing.T, base string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Status, Reason string }
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("/readyz body %q: %v", b, err)
	}
	return resp.StatusCode, body.Reason
}

// postID posts an event with id to base/hooks/shop and returns the status
// and the Retry-After header.
func postBudgetID(t *testing.T, base, id string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/hooks/shop", strings.NewReader(`{"id":"`+id+`"}`))
	req.Header.Set("X-Id", id)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// TestBudget_MaxQueued runs a real serve whose target is down: once more
// deliveries wait than [store] max_queued, new webhooks get 503 with
// Retry-After and nothing is stored, /readyz says why; when the target
// comes back and the queue drains, acceptance resumes by itself, and
// every acknowledged event is stored and delivered.
func TestBudget_MaxQueued(t *testing.T) {
	var up atomic.Bool
	target := newRecordingTarget(t, func(int) int {
		if up.Load() {
			return http.StatusOK
		}
		return http.StatusServiceUnavailable
	})
	bin := buildHookbox(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := filepath.Join(dir, "hookbox.toml")
	writeFile(t, cfg, fmt.Sprintf(`
[server]
listen = %q

[store]
path = %q
max_queued = 5

[delivery]
max_attempts = 1000
backoff = "100ms"
max_backoff = "200ms"

[[source]]
name = "shop"
verify = "none"
insecure = true
event_id = "header:X-Id"

[[target]]
name = "down"
source = "shop"
url = %q
`, addr, filepath.Join(dir, "hookbox.db"), target.URL))
	p := startServe(t, bin, cfg, addr)
	base := "http://" + addr
	if code, reason := readyz(t, base); code != http.StatusOK {
		t.Fatalf("/readyz at the start: %d %q, want 200", code, reason)
	}

	acked := map[string]bool{}
	var refused []string
	n := 0
	next := func() string { n++; return fmt.Sprintf("evt_%d", n) }
	// The count is read once a second: send until the budget bites.
	waitFor(t, 20*time.Second, "a 503 once over max_queued", func() bool {
		id := next()
		code, retry := postBudgetID(t, base, id)
		switch code {
		case http.StatusOK:
			acked[id] = true
			time.Sleep(20 * time.Millisecond)
			return false
		case http.StatusServiceUnavailable:
			if retry == "" {
				t.Fatalf("503 without Retry-After")
			}
			refused = append(refused, id)
			return true
		}
		t.Fatalf("post %s: %d", id, code)
		return false
	})
	if len(acked) <= 5 {
		t.Errorf("%d accepted before the 503, want more than max_queued (5)", len(acked))
	}
	code, reason := readyz(t, base)
	if code != http.StatusServiceUnavailable || !strings.Contains(reason, "store.max_queued") {
		t.Errorf("/readyz over the budget: %d %q, want 503 naming store.max_queued", code, reason)
	}
	for range 3 {
		id := next()
		if code, _ := postBudgetID(t, base, id); code != http.StatusServiceUnavailable {
			t.Fatalf("post %s over the budget: %d, want 503", id, code)
		}
		refused = append(refused, id)
	}

	up.Store(true) // the target is back: the queue drains
	waitFor(t, 20*time.Second, "acceptance to resume", func() bool {
		id := next()
		code, _ := postBudgetID(t, base, id)
		if code == http.StatusOK {
			acked[id] = true
			return true
		}
		refused = append(refused, id)
		time.Sleep(50 * time.Millisecond)
		return false
	})
	waitFor(t, 10*time.Second, "/readyz to answer 200 again", func() bool {
		code, _ := readyz(t, base)
		return code == http.StatusOK
	})
	waitFor(t, 20*time.Second, "every acked event delivered", func() bool {
		delivered := map[string]bool{}
		for _, h := range target.Hits() {
			delivered[h.Header.Get("Hookbox-Event-Id")] = true
		}
		for id := range acked {
			if !delivered[id] {
				return false
			}
		}
		return true
	})
	p.stop(t, syscall.SIGTERM, 20*time.Second)

	stored := map[string]bool{}
	for _, e := range jsonLines[struct {
		EventID    string `json:"event_id"`
		Deliveries []struct{ Status string }
	}](t, cliRun(t, dir, "events", "--json", "--limit", "1000")) {
		stored[e.EventID] = true
		if len(e.Deliveries) != 1 || e.Deliveries[0].Status != "done" {
			t.Errorf("event %s: deliveries %+v, want one done", e.EventID, e.Deliveries)
		}
	}
	for id := range acked {
		if !stored[id] {
			t.Errorf("acknowledged event %s is not stored", id)
		}
	}
	for _, id := range refused {
		if stored[id] {
			t.Errorf("event %s was answered 503 but stored", id)
		}
	}
	if len(stored) != len(acked) {
		t.Errorf("%d events stored, want the %d acknowledged", len(stored), len(acked))
	}
	t.Logf("%d acknowledged, %d refused with 503 while over max_queued, 0 lost", len(acked), len(refused))
}

// TestBudget_MinFreeDisk: under [store] min_free_disk free on the store's
// file system, new webhooks get 503 before anything is written; once the
// space is back, they are accepted again, without a restart.
func TestBudget_MinFreeDisk(t *testing.T) {
	var free atomic.Uint64
	free.Store(10 << 30)
	tm := MustRunMain(t, `
[store]
min_free_disk = "1GiB"

[[source]]
name = "shop"
verify = "none"
insecure = true
event_id = "header:X-Id"
`, "", func(m *hookbox.Main) {
		m.BudgetInterval = 20 * time.Millisecond
		m.FreeDisk = func(string) (uint64, error) { return free.Load(), nil }
	})
	if code, _ := postBudgetID(t, tm.URL, "before"); code != http.StatusOK {
		t.Fatalf("post with 10 GiB free: %d, want 200", code)
	}
	free.Store(512 << 20)
	var refused []string
	n := 0
	waitFor(t, 5*time.Second, "a 503 with 512 MiB free", func() bool {
		n++
		id := fmt.Sprintf("probe_%d", n)
		code, retry := postBudgetID(t, tm.URL, id)
		if code == http.StatusServiceUnavailable && retry != "" {
			refused = append(refused, id)
			return true
		}
		return false
	})
	for i := range 3 {
		id := fmt.Sprintf("refused_%d", i)
		if code, _ := postBudgetID(t, tm.URL, id); code != http.StatusServiceUnavailable {
			t.Fatalf("post %s under the disk budget: %d, want 503", id, code)
		}
		refused = append(refused, id)
	}
	code, reason := readyz(t, tm.URL)
	if code != http.StatusServiceUnavailable || !strings.Contains(reason, "store.min_free_disk") || !strings.Contains(reason, "512.0 MiB") {
		t.Errorf("/readyz under the disk budget: %d %q, want 503 naming store.min_free_disk and the free space", code, reason)
	}
	if !strings.Contains(tm.Logs.String(), "refusing new webhooks with 503") {
		t.Errorf("no warning logged when the budget bit:\n%s", tm.Logs.String())
	}
	free.Store(2 << 30)
	waitFor(t, 5*time.Second, "acceptance to resume with 2 GiB free", func() bool {
		code, _ := postBudgetID(t, tm.URL, "after")
		return code == http.StatusOK
	})
	if code, reason := readyz(t, tm.URL); code != http.StatusOK {
		t.Errorf("/readyz back under the budget: %d %q, want 200", code, reason)
	}
	stored := storedIDs(t, tm)
	if !stored["before"] || !stored["after"] {
		t.Errorf("stored %v, want before and after", stored)
	}
	for _, id := range refused {
		if stored[id] {
			t.Errorf("%s was answered 503 but stored", id)
		}
	}
}

// TestReadyz_Store: /readyz answers 503 naming the store once the store
// stops taking writes, and 200 while it does.
func TestReadyz_Store(t *testing.T) {
	tm := MustRunMain(t, `
[[source]]
name = "shop"
verify = "none"
insecure = true
event_id = "header:X-Id"
`, "", func(m *hookbox.Main) { m.LiveInterval = 20 * time.Millisecond })
	if code, reason := readyz(t, tm.URL); code != http.StatusOK {
		t.Fatalf("/readyz: %d %q, want 200", code, reason)
	}
	// The store closed under a running serve: no write can commit.
	tm.DB.Close()
	waitFor(t, 5*time.Second, "/readyz to say the store takes no writes", func() bool {
		code, reason := readyz(t, tm.URL)
		return code == http.StatusServiceUnavailable && strings.HasPrefix(reason, "store: ")
	})
	if code, _ := postBudgetID(t, tm.URL, "e1"); code != http.StatusServiceUnavailable {
		t.Errorf("post with the store closed: %d, want 503", code)
	}
}
