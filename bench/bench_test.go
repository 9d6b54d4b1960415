package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hookbox/bench"
)

func TestHistogram_Percentile(t *testing.T) {
	var h bench.Histogram
	for i := 1; i <= 10000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5 * time.Millisecond}, {0.9, 9 * time.Millisecond}, {0.99, 9900 * time.Microsecond}, {1, 10 * time.Millisecond}} {
		got := h.Percentile(tc.q)
		if rel := math.Abs(float64(got-tc.want)) / float64(tc.want); rel > 0.04 {
			t.Errorf("p%g=%s, want %s within 4%%", tc.q*100, got, tc.want)
		}
	}
	if got := h.Count(); got != 10000 {
		t.Errorf("count=%d, want 10000", got)
	}
	var other bench.Histogram
	other.Record(time.Second)
	h.Merge(&other)
	if got := h.Max(); got != time.Second {
		t.Errorf("max after merge=%s, want 1s", got)
	}
	var empty bench.Histogram
	if got := empty.Percentile(0.99); got != 0 {
		t.Errorf("empty p99=%s, want 0", got)
	}
}

func TestSpreadOf(t *testing.T) {
	if got := bench.SpreadOf([]float64{3, 1, 2}); got != (bench.Spread{Median: 2, Min: 1, Max: 3, N: 3}) {
		t.Errorf("SpreadOf(3,1,2)=%+v", got)
	}
	if got := bench.SpreadOf([]float64{4, 1, 2, 3}); got.Median != 2.5 {
		t.Errorf("median of 1..4=%g, want 2.5", got.Median)
	}
	rows := []bench.Row{
		{Round: 1, Server: "bare", Values: map[string]float64{"r": 10}},
		{Round: 1, Server: "hookbox", Values: map[string]float64{"r": 5}},
		{Round: 2, Server: "bare", Values: map[string]float64{"r": 20}},
		{Round: 2, Server: "hookbox", Values: map[string]float64{"r": 5}},
	}
	if got := bench.Ratio(rows, "hookbox", "r", "bare", "r"); got.Min != 0.25 || got.Max != 0.5 {
		t.Errorf("ratio=%+v, want 0.25–0.5", got)
	}
}

func TestPushBody(t *testing.T) {
	for _, n := range []int{1024, 4096} {
		b := bench.PushBody(n)
		if len(b) != n {
			t.Errorf("len=%d, want %d", len(b), n)
		}
		if !json.Valid(b) {
			t.Errorf("body of %d bytes is not valid JSON", n)
		}
	}
}

func TestLoad_Run(t *testing.T) {
	srv := httptest.NewServer(bench.Bare())
	defer srv.Close()
	req := bench.NewGitHubRequest("s", 1024)
	for _, rate := range []float64{0, 200} {
		st, err := bench.Load{
			URL: srv.URL + "/hooks/github", Request: req, IDPrefix: "t", Conns: 4, Duration: 200 * time.Millisecond, Rate: rate,
		}.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.OK == 0 || st.Failed != 0 {
			t.Fatalf("rate %g: ok=%d failed=%d (%s), want ok > 0 and no failures", rate, st.OK, st.Failed, st.FirstError)
		}
		if st.Latency.Count() != uint64(st.OK) {
			t.Errorf("latency samples=%d, want %d", st.Latency.Count(), st.OK)
		}
		if rate > 0 && (st.OK < 20 || st.OK > 45) {
			t.Errorf("rate %g for 200ms: %d answers, want about 40", rate, st.OK)
		}
	}
	if _, err := (bench.Load{URL: "http://192.0.2.1/x", Conns: 1, Duration: time.Millisecond}).Run(context.Background()); err == nil {
		t.Error("Run to a non-loopback address: no error")
	}
}

func TestReadProc(t *testing.T) {
	ps, err := bench.ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if ps.HWMKiB <= 0 || ps.RSSKiB <= 0 {
		t.Errorf("VmHWM=%d VmRSS=%d, want > 0", ps.HWMKiB, ps.RSSKiB)
	}
}

// The sink counts each distinct event once, over a keep-alive connection
// from Go's HTTP client (as hookbox's URL targets send, a Content-Length
// body), and refuses what it cannot read.
func TestSink(t *testing.T) {
	s, err := bench.StartSink()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	client := &http.Client{Timeout: 5 * time.Second}
	var reused int
	post := func(source, id string, body string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, s.URL(), bytes.NewReader([]byte(body)))
		req.Header.Set("Hookbox-Source", source)
		req.Header.Set("Hookbox-Event-Id", id)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) {
				if info.Reused {
					reused++
				}
			},
		}))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("post %s:%s: %v", source, id, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	before := time.Now()
	for _, d := range []struct{ source, id string }{{"shop", "a"}, {"shop", "b"}, {"shop", "a"}, {"github", "a"}} {
		if code := post(d.source, d.id, strings.Repeat("x", 3000)); code != http.StatusOK {
			t.Fatalf("post %s:%s: status %d", d.source, d.id, code)
		}
	}
	if err := s.Refused(); err != nil {
		t.Errorf("Refused() = %v after well-formed requests, want nil", err)
	}
	if reused != 3 {
		t.Errorf("%d of 3 later requests reused the connection, want every one (keep-alive)", reused)
	}
	if n, last := s.Counts(); n != 3 || last.Before(before) {
		t.Errorf("counts %d (last %v), want 3 distinct events seen after %v", n, last, before)
	}
	s.Reset()
	if n, _ := s.Counts(); n != 0 {
		t.Errorf("after Reset: %d, want 0", n)
	}

	addr := strings.TrimPrefix(strings.TrimSuffix(s.URL(), "/sink"), "http://")

	// Connection: close is answered, counted, and then the connection closes.
	cc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	fmt.Fprintf(cc, "POST /sink HTTP/1.1\r\nHost: x\r\nHookbox-Source: shop\r\nHookbox-Event-Id: z\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
	cc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(cc); err != nil || !strings.HasPrefix(string(got), "HTTP/1.1 200 ") {
		t.Errorf("Connection: close request: read %q, %v; want a 200 and then the end of the connection", got, err)
	}
	if n, _ := s.Counts(); n != 1 {
		t.Errorf("after a Connection: close request: %d counted, want 1", n)
	}
	s.Reset()

	// A chunked body is not read: the connection is closed, nothing counted.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /sink HTTP/1.1\r\nHost: x\r\nHookbox-Source: shop\r\nHookbox-Event-Id: c\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 64)); err == nil {
		t.Errorf("chunked request answered with %d bytes, want the connection closed", n)
	}
	if n, _ := s.Counts(); n != 0 {
		t.Errorf("a chunked request was counted")
	}
	if err := s.Refused(); err == nil || !strings.Contains(err.Error(), "only Content-Length bodies") {
		t.Errorf("Refused() = %v, want why the chunked request was refused", err)
	}
}

// The sync floor writes and fsyncs at the rate asked, for the time asked,
// and stops by itself.
func TestSyncFloor(t *testing.T) {
	// 40 a second leaves each write+fsync 25 ms: a slow disk still keeps up.
	h, err := bench.SyncFloor(context.Background(), t.TempDir(), 40, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if n := h.Count(); n < 16 || n > 24 {
		t.Errorf("%d syncs at 40/s for 0.5 s, want about 20", n)
	}
	if h.Percentile(0.5) <= 0 {
		t.Errorf("median sync %v, want > 0", h.Percentile(0.5))
	}
	// A rate no disk keeps up with still stops when the time is up.
	start := time.Now()
	if _, err := bench.SyncFloor(context.Background(), t.TempDir(), 1e6, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("1,000,000 syncs a second for 0.1 s took %v, want it to stop after about 0.1 s", took)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := bench.SyncFloor(ctx, t.TempDir(), 200, time.Second); err == nil {
		t.Error("cancelled: no error")
	}
	if _, err := bench.SyncFloor(context.Background(), filepath.Join(t.TempDir(), "missing"), 200, time.Second); err == nil {
		t.Error("missing directory: no error")
	}
}

// Counters reads the named counters from /metrics and says which is
// missing or unreadable, rather than reporting a zero.
func TestCounters(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# HELP a_total A.\n# TYPE a_total counter\na_total 7\nb_total 12\nbad_total x\n")
	}))
	defer srv.Close()
	ctx, client := context.Background(), srv.Client()
	if got, err := bench.Counters(ctx, client, srv.URL, "b_total", "a_total"); err != nil || len(got) != 2 || got[0] != 12 || got[1] != 7 {
		t.Errorf("Counters(b_total, a_total) = %v, %v; want [12 7]", got, err)
	}
	if _, err := bench.Counters(ctx, client, srv.URL, "a_total", "c_total"); err == nil || !strings.Contains(err.Error(), "no c_total line") {
		t.Errorf("a missing counter: %v, want an error naming it", err)
	}
	if _, err := bench.Counters(ctx, client, srv.URL, "bad_total"); err == nil || !strings.Contains(err.Error(), `bad_total "x"`) {
		t.Errorf("an unreadable counter: %v, want an error quoting it", err)
	}
}
