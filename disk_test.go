//go:build linux

package main_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hookbox/dedupe"
)

// mountTmpfs mounts a tmpfs of size bytes on a fresh temp dir and unmounts
// it when the test ends. It skips the test where that is not possible (not
// root, no mount permission in the container, not Linux).
func mountTmpfs(tb testing.TB, size int) string {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root to mount a small tmpfs (the only way to get a really full disk)")
	}
	dir := tb.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		tb.Skipf("cannot mount a tmpfs here (%v): run as root on Linux with mount permission", err)
	}
	// Registered after TempDir's own cleanup, so it runs before the removal.
	tb.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
	return dir
}

// diskPost sends one event to the local sink with its id in Idempotency-Key.
// A transport error means the process stopped serving.
func diskPost(client *http.Client, url, id string, body []byte) (int, http.Header, string, error) {
	req, err := http.NewRequest(http.MethodPost, url+"/hooks/disk", bytes.NewReader(body))
	if err != nil {
		return 0, nil, "", err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Idempotency-Key", id)
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, "", fmt.Errorf("post %s: %w (the process must keep serving on a full disk)", id, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, resp.Header, string(b), nil
}

func randomBody(tb testing.TB) []byte {
	b := make([]byte, (8<<10)+mrand.IntN(24<<10))
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestDisk_FullThenRecovers fills the disk under the store until commits
// fail, checks that hookbox answers 503 with Retry-After (never a 200 for an
// event it could not keep) and keeps serving, then frees space and checks it
// accepts again without a restart and lost nothing it acknowledged.
func TestDisk_FullThenRecovers(t *testing.T) {
	const size = 3 << 20
	dir := mountTmpfs(t, size)
	// A filler beside the database takes a third of the space; deleting it
	// is how the operator "frees space" later.
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, bytes.Repeat([]byte{0xAA}, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := MustRunMain(t, "", dir)
	client := &http.Client{Timeout: 10 * time.Second}
	ctx := context.Background()

	acked := map[string][]byte{}
	var refused []string

	// Fill: four senders at once (so failed commits hit shared batches
	// too) post until a dozen answers were 503, each bounded in count.
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 250 {
				mu.Lock()
				enough := len(refused) >= 12
				mu.Unlock()
				if enough {
					return
				}
				id := fmt.Sprintf("fill-%d-%03d", w, i)
				body := randomBody(t)
				code, h, resp, err := diskPost(client, tm.URL, id, body)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				switch {
				case code == http.StatusOK && strings.Contains(resp, `"accepted"`):
					acked[id] = body
				case code == http.StatusServiceUnavailable && h.Get("Retry-After") != "":
					refused = append(refused, id)
				default:
					err = fmt.Errorf("post %s: %d (Retry-After %q) %s, want 200 accepted or 503 with Retry-After", id, code, h.Get("Retry-After"), resp)
				}
				mu.Unlock()
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(refused) < 12 {
		t.Fatalf("%d answers 503 after 1000 posts of 8–32 KiB on a %d MiB disk, want 12", len(refused), size>>20)
	}
	hxHealthy(t, tm)
	stored := storedIDs(t, tm)
	for _, id := range refused {
		if stored[id] {
			t.Fatalf("event %s answered 503 but is stored", id)
		}
	}
	full := len(acked)
	t.Logf("disk full after %d accepted events; %d answered 503", full, len(refused))

	// Free space: the writer must take writes again by itself.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	var retried int
	waitFor(t, 10*time.Second, "a 200 after freeing space", func() bool {
		time.Sleep(20 * time.Millisecond)
		id := refused[0]
		code, _, resp, err := diskPost(client, tm.URL, id, []byte("retried "+id))
		if err != nil {
			t.Fatal(err)
		}
		retried++
		if code == http.StatusOK {
			if !strings.Contains(resp, `"accepted"`) {
				t.Fatalf("retry of refused %s: %s, want accepted (it was never stored)", id, resp)
			}
			acked[id] = []byte("retried " + id)
			return true
		}
		return false
	})
	// Senders retry what got 503: each is new, not a duplicate.
	for _, id := range refused[1:] {
		body := []byte("retried " + id)
		if code, _, resp, err := diskPost(client, tm.URL, id, body); err != nil || code != http.StatusOK || !strings.Contains(resp, `"accepted"`) {
			t.Fatalf("retry of refused %s after freeing space: %d %s %v, want 200 accepted", id, code, resp, err)
		}
		acked[id] = body
	}
	for i := range 10 {
		id := fmt.Sprintf("after-%02d", i)
		body := randomBody(t)
		if code, _, resp, err := diskPost(client, tm.URL, id, body); err != nil || code != http.StatusOK {
			t.Fatalf("post %s after freeing space: %d %s %v, want 200", id, code, resp, err)
		}
		acked[id] = body
	}
	hxHealthy(t, tm)

	// Every 200 is stored, byte-exact.
	list, err := tm.DB.ListEvents(ctx, dedupe.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]int64{}
	for _, e := range list {
		rows[e.EventID] = e.ID
	}
	lost := 0
	for id, body := range acked {
		row, ok := rows[id]
		if !ok {
			lost++
			t.Errorf("acked event %s is not stored", id)
			continue
		}
		e, err := tm.DB.GetEvent(ctx, row)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(e.Body, body) {
			t.Errorf("event %s body differs from what was acked (%d bytes stored, %d sent)", id, len(e.Body), len(body))
		}
	}
	if len(rows) != len(acked) {
		t.Errorf("stored events=%d, want %d (the acked ones)", len(rows), len(acked))
	}
	t.Logf("full disk: %d accepted before full, %d refused with 503 + Retry-After, accepted again after %d tries once space was freed; %d acked, %d lost; failed commits %d",
		full, len(refused), retried, len(acked), lost, tm.DB.Stats().FailedCommit)
	// An operator sees it in the metrics.
	resp, err := client.Get(tm.AdminURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	scrape, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if n := metricValue(t, string(scrape), "hookbox_store_failed_commits_total"); n < 1 {
		t.Errorf("hookbox_store_failed_commits_total %d after commits failed on a full disk, want ≥ 1", n)
	}

	// A clean stop on the still nearly full disk (the checkpoint into the
	// main file may not fit: the WAL then stays) and a restart keep it all.
	if err := tm.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	again := MustRunMain(t, "", dir)
	stored = storedIDs(t, again)
	for id := range acked {
		if !stored[id] {
			t.Errorf("acked event %s is missing after a restart", id)
		}
	}
	if err := again.Close(); err != nil {
		t.Fatalf("close after restart: %v", err)
	}
	integrityCheck(t, filepath.Join(dir, "hookbox.db"))
}

// storedIDs lists the event ids in tm's store.
func storedIDs(tb testing.TB, tm *testMain) map[string]bool {
	tb.Helper()
	list, err := tm.DB.ListEvents(context.Background(), dedupe.Filter{})
	if err != nil {
		tb.Fatalf("list events: %v", err)
	}
	out := make(map[string]bool, len(list))
	for _, e := range list {
		out[e.EventID] = true
	}
	return out
}
