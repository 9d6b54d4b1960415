package main_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"
)

// slowConfig has short server timeouts so that slow clients are cut off
// quickly.
const slowConfig = slowServerTimeouts + `
[[source]]
name = "stripe"
verify = "stripe"
secret = "` + hxStripeSecret + `"
`

const slowServerTimeouts = `
[server]
read_header_timeout = "500ms"
read_timeout = "1s"
write_timeout = "2s"
idle_timeout = "1s"
`

// hxClosedWithin reads conn until the server closes it (EOF or reset) and
// returns how long that took after start; it fails after limit.
func hxClosedWithin(tb testing.TB, conn net.Conn, start time.Time, limit time.Duration) (time.Duration, []byte) {
	tb.Helper()
	_ = conn.SetReadDeadline(start.Add(limit))
	got, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		tb.Fatalf("connection still open after %s (read %q)", limit, got)
	}
	return time.Since(start), got
}

// TestSlow_TrickledHeaders sends a request's header one byte every 100 ms:
// the server closes the connection once read_header_timeout (500ms) passes,
// long before the header would be complete.
func TestSlow_TrickledHeaders(t *testing.T) {
	tm := MustRunMain(t, slowConfig, "")
	conn, err := net.Dial("tcp", tm.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := "POST /hooks/stripe HTTP/1.1\r\nHost: x\r\nStripe-Signature: t=1,v1=00\r\nContent-Length: 2\r\n\r\n{}"
	start := time.Now()
	go func() {
		// At most len(head) writes, 100 ms apart (over 9 s): the server must
		// cut the connection long before the end.
		for i := 0; i < len(head); i++ {
			if _, err := conn.Write([]byte{head[i]}); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	took, got := hxClosedWithin(t, conn, start, 2*time.Second)
	t.Logf("closed after %s; server wrote %q", took.Round(time.Millisecond), got)
	if took < 400*time.Millisecond {
		t.Errorf("closed after %s, before read_header_timeout (500ms)", took)
	}
	if n := hxCount(t, tm); n != 0 {
		t.Errorf("stored events=%d, want 0", n)
	}
	hxHealthy(t, tm)
}

// TestSlow_TrickledBody sends a complete header and then the body one byte
// every 100 ms: read_timeout (1s) ends the request; nothing is stored and
// no 5xx is sent.
func TestSlow_TrickledBody(t *testing.T) {
	tm := MustRunMain(t, slowConfig, "")
	conn, err := net.Dial("tcp", tm.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := []byte(`{"id":"evt_slow_body","type":"invoice.paid","pad":"................................................"}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	start := time.Now()
	fmt.Fprintf(conn, "POST /hooks/stripe HTTP/1.1\r\nHost: x\r\nStripe-Signature: t=%s,v1=%s\r\nContent-Length: %d\r\n\r\n",
		ts, hxStripeV1(ts, body), len(body))
	go func() {
		for i := 0; i < len(body); i++ {
			if _, err := conn.Write(body[i : i+1]); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	took, got := hxClosedWithin(t, conn, start, 3*time.Second)
	t.Logf("closed after %s; server wrote %q", took.Round(time.Millisecond), got)
	if len(got) > 0 {
		if len(got) < 12 || string(got[:9]) != "HTTP/1.1 " || got[9] != '4' {
			t.Errorf("answer %q, want a 4xx or no answer", got)
		}
	}
	if n := hxCount(t, tm); n != 0 {
		t.Errorf("stored events=%d, want 0", n)
	}
	hxHealthy(t, tm)
}

// TestSlow_IdleConnectionsDoNotBlockSenders holds 300 connections open
// (half silent, half with a partial request line) and checks that a real
// sender still gets its 200 at once.
func TestSlow_IdleConnectionsDoNotBlockSenders(t *testing.T) {
	// Default timeouts (5s header): the idle connections stay open while
	// the sender posts.
	tm := MustRunMain(t, `
[[source]]
name = "stripe"
verify = "stripe"
secret = "`+hxStripeSecret+`"
`, "")
	const idle = 300
	conns := make([]net.Conn, 0, idle)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < idle; i++ {
		c, err := net.DialTimeout("tcp", tm.Addr(), 2*time.Second)
		if err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if i%2 == 1 {
			if _, err := c.Write([]byte("POST /hooks/stripe HTTP/1.1\r\nHost: x\r\n")); err != nil {
				t.Fatal(err)
			}
		}
	}
	var slowest time.Duration
	for i := 0; i < 5; i++ {
		body := []byte(fmt.Sprintf(`{"id":"evt_idle_%d","type":"invoice.paid"}`, i))
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req := hxReq{target: "/hooks/stripe", body: body, headers: [][2]string{{"Stripe-Signature", "t=" + ts + ",v1=" + hxStripeV1(ts, body)}}}
		start := time.Now()
		a := hxRoundTrip(t, tm.Addr(), req.wire(tm.Addr()))[0]
		took := time.Since(start)
		if a.status != 200 {
			t.Fatalf("send %d with %d idle connections: %d %q, want 200", i, idle, a.status, a.body)
		}
		slowest = max(slowest, took)
		if took > 2*time.Second {
			t.Errorf("send %d took %s with %d idle connections, want under 2s", i, took, idle)
		}
	}
	t.Logf("slowest of 5 sends with %d idle connections: %s", idle, slowest.Round(time.Microsecond))
	if n := hxCount(t, tm); n != 5 {
		t.Errorf("stored events=%d, want 5", n)
	}
}

// TestSlow_IdleConnectionsAreClosed opens 300 connections that never send a
// byte: each is closed by the server once read_header_timeout passes, so
// idle clients cannot pin file descriptors.
func TestSlow_IdleConnectionsAreClosed(t *testing.T) {
	tm := MustRunMain(t, slowConfig, "")
	const idle = 300
	conns := make([]net.Conn, 0, idle)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	start := time.Now()
	for i := 0; i < idle; i++ {
		c, err := net.DialTimeout("tcp", tm.Addr(), 2*time.Second)
		if err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	buf := make([]byte, 1)
	for i, c := range conns {
		// Every connection has the same 2.5s from start (500ms timeout,
		// plus slack for a loaded 2-core machine).
		_ = c.SetReadDeadline(start.Add(2500 * time.Millisecond))
		_, err := c.Read(buf)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("idle connection %d still open after %s", i, time.Since(start))
		}
		if err == nil {
			t.Fatalf("idle connection %d: server sent data", i)
		}
	}
	t.Logf("all %d idle connections closed within %s", idle, time.Since(start).Round(time.Millisecond))
	hxHealthy(t, tm)
}
