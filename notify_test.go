package main_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeSystemd is a NOTIFY_SOCKET: a unixgram socket in a temp dir that
// keeps every datagram it gets, with when it came.
type fakeSystemd struct {
	path string
	conn *net.UnixConn
	mu   sync.Mutex
	msgs []notifyMsg
	got  chan struct{}
}

type notifyMsg struct {
	at   time.Time
	text string
}

func newFakeSystemd(t *testing.T) *fakeSystemd {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeSystemd{path: path, conn: conn, got: make(chan struct{}, 1)}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			f.mu.Lock()
			f.msgs = append(f.msgs, notifyMsg{time.Now(), string(buf[:n])})
			f.mu.Unlock()
			select {
			case f.got <- struct{}{}:
			default:
			}
		}
	}()
	return f
}

// count is how many datagrams holding line came after since.
func (f *fakeSystemd) count(line string, since time.Time) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, m := range f.msgs {
		if !m.at.Before(since) && strings.Contains("\n"+m.text+"\n", "\n"+line+"\n") {
			n++
		}
	}
	return n
}

func (f *fakeSystemd) all() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	for _, m := range f.msgs {
		fmt.Fprintf(&b, "%s %q\n", m.at.Format("15:04:05.000"), m.text)
	}
	return b.String()
}

// TestSystemd_Notify runs a real serve under a fake systemd with a
// watchdog: READY=1 once both listeners answer and the store is open,
// WATCHDOG=1 while the writer commits, none while another process holds
// the store's write lock (a wedged writer: systemd would restart the
// unit), again once it is free, and STOPPING=1 at SIGTERM.
func TestSystemd_Notify(t *testing.T) {
	sd := newFakeSystemd(t)
	bin := buildHookbox(t)
	dir := t.TempDir()
	addr, admin := freeAddr(t), freeAddr(t)
	cfg := adminConfig(t, dir, addr, admin, "")
	out := &syncBuffer{}
	// launchServeEnv waits for /healthz; READY=1 must have come before.
	p := launchServeWith(t, "", addr, out, out, []string{"NOTIFY_SOCKET=" + sd.path, "WATCHDOG_USEC=900000"},
		bin, "serve", "--config", cfg, "--log-format", "json")
	start := time.Now().Add(-time.Minute)
	waitFor(t, 5*time.Second, "READY=1", func() bool { return sd.count("READY=1", start) == 1 })
	// READY came after the listeners were bound: both answer now, at once.
	for _, base := range []string{"http://" + addr + "/healthz", "http://" + admin + "/metrics"} {
		resp, err := http.Get(base)
		if err != nil {
			t.Fatalf("GET %s after READY=1: %v", base, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s after READY=1: %d", base, resp.StatusCode)
		}
	}
	// A third of the 0.9 s watchdog: about three pets a second.
	since := time.Now()
	time.Sleep(1500 * time.Millisecond)
	if n := sd.count("WATCHDOG=1", since); n < 3 {
		t.Fatalf("%d WATCHDOG=1 in 1.5 s with WatchdogSec 0.9 s, want at least 3:\n%s", n, sd.all())
	}

	// Another process takes the store's write lock: the writer cannot
	// commit, and the pets stop.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "hookbox.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	locked := time.Now()
	waitFor(t, 5*time.Second, "/readyz to say the store takes no writes", func() bool {
		code, reason := readyz(t, "http://"+addr)
		return code == http.StatusServiceUnavailable && strings.HasPrefix(reason, "store: ")
	})
	quiet := time.Now()
	time.Sleep(1500 * time.Millisecond)
	if n := sd.count("WATCHDOG=1", quiet); n != 0 {
		t.Errorf("%d WATCHDOG=1 while the writer could not commit, want none:\n%s", n, sd.all())
	}
	if _, err := conn.ExecContext(context.Background(), `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	waitFor(t, 15*time.Second, "WATCHDOG=1 once the writer commits again", func() bool { return sd.count("WATCHDOG=1", freed) > 0 })
	waitFor(t, 5*time.Second, "/readyz to answer 200 again", func() bool {
		code, _ := readyz(t, "http://"+addr)
		return code == http.StatusOK
	})
	t.Logf("the store locked at %s: pets stopped; freed after %s: pets again", locked.Format("15:04:05.000"), freed.Sub(locked).Round(time.Millisecond))

	p.stop(t, syscall.SIGTERM, 20*time.Second)
	if sd.count("STOPPING=1", start) != 1 {
		t.Errorf("no STOPPING=1 at SIGTERM:\n%s", sd.all())
	}
}
