package sdnotify_test

import (
	"net"
	"path/filepath"
	"testing"
	"time"

	"hookbox/internal/sdnotify"
)

func TestNotifier(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n, err := sdnotify.New(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Notify("READY=1\nSTATUS=up"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 128)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	m, err := conn.Read(buf)
	if err != nil || string(buf[:m]) != "READY=1\nSTATUS=up" {
		t.Errorf("got %q (%v), want the state as sent", buf[:m], err)
	}

	if err := (&sdnotify.Notifier{}).Notify("X=1"); err == nil {
		t.Error("a notifier without a socket sent")
	}
	var none *sdnotify.Notifier
	if err := none.Notify("READY=1"); err != nil {
		t.Errorf("nil notifier: %v, want a no-op", err)
	}
	if n, err := sdnotify.New(""); n != nil || err != nil {
		t.Errorf("no NOTIFY_SOCKET: %v, %v; want nil, nil", n, err)
	}
	if _, err := sdnotify.New("relative.sock"); err == nil {
		t.Error("a relative NOTIFY_SOCKET was taken")
	}
	gone, _ := sdnotify.New(filepath.Join(t.TempDir(), "nobody"))
	if err := gone.Notify("READY=1"); err == nil {
		t.Error("no error for a socket nobody listens on")
	}
}

func TestNotifier_Abstract(t *testing.T) {
	name := "hookbox-test-" + filepath.Base(t.TempDir())
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: "@" + name, Net: "unixgram"})
	if err != nil {
		t.Skip("no abstract unix sockets here:", err)
	}
	defer conn.Close()
	n, err := sdnotify.New("@" + name)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Notify("WATCHDOG=1"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	m, err := conn.Read(buf)
	if err != nil || string(buf[:m]) != "WATCHDOG=1" {
		t.Errorf("got %q (%v)", buf[:m], err)
	}
}

func TestWatchdogInterval(t *testing.T) {
	for _, tc := range []struct {
		usec, pid string
		want      time.Duration
		ok, err   bool
	}{
		{"", "", 0, false, false},
		{"30000000", "", 30 * time.Second, true, false},
		{"30000000", "42", 30 * time.Second, true, false},
		{"30000000", "43", 0, false, false}, // meant for another process
		{"0", "", 0, false, true},
		{"ten", "", 0, false, true},
		{"1000", "x", 0, false, true},
	} {
		env := map[string]string{"WATCHDOG_USEC": tc.usec, "WATCHDOG_PID": tc.pid}
		got, ok, err := sdnotify.WatchdogInterval(func(k string) string { return env[k] }, 42)
		if got != tc.want || ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("USEC=%q PID=%q: %v %v %v, want %v %v error=%v", tc.usec, tc.pid, got, ok, err, tc.want, tc.ok, tc.err)
		}
	}
}
