package bench_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/bench"
)

// Every request is a new event with a valid signature: the body and the
// headers GitHub sends, a delivery id never seen before, on as many
// keep-alive connections as asked.
func TestLoad_Requests(t *testing.T) {
	const secret = "s3cret"
	req := bench.NewGitHubRequest(secret, 1024)
	var mu sync.Mutex
	ids := map[string]bool{}
	remotes := map[string]bool{}
	var bad atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		switch {
		case r.Method != http.MethodPost || r.URL.Path != "/hooks/github" || r.URL.RawQuery != "x=1":
			bad.Store(fmt.Sprintf("request %s %s", r.Method, r.URL))
		case string(body) != string(req.Body) || r.ContentLength != int64(len(req.Body)):
			bad.Store(fmt.Sprintf("body of %d bytes (Content-Length %d), want the %d sent", len(body), r.ContentLength, len(req.Body)))
		case r.Header.Get("X-Hub-Signature-256") != "sha256="+hex.EncodeToString(mac.Sum(nil)):
			bad.Store("signature " + r.Header.Get("X-Hub-Signature-256") + " does not verify")
		case r.Header.Get("X-GitHub-Event") != "push" || r.Header.Get("Content-Type") != "application/json":
			bad.Store(fmt.Sprintf("headers %v", r.Header))
		}
		mu.Lock()
		id := r.Header.Get(bench.IDHeader)
		if ids[id] {
			bad.Store("delivery id " + id + " sent twice")
		}
		ids[id] = true
		remotes[r.RemoteAddr] = true
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	st, err := bench.Load{
		URL: srv.URL + "/hooks/github?x=1", Request: req, IDPrefix: "run1", Conns: 3, Duration: 200 * time.Millisecond,
	}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v := bad.Load(); v != nil {
		t.Fatal(v)
	}
	if st.OK == 0 || st.Failed != 0 || int64(len(ids)) != st.OK {
		t.Fatalf("ok=%d failed=%d (%s), distinct ids %d; want every answer a 200 to a request of its own", st.OK, st.Failed, st.FirstError, len(ids))
	}
	if len(remotes) != 3 {
		t.Errorf("requests came over %d connections, want 3 (keep-alive)", len(remotes))
	}
	idRE := regexp.MustCompile(`^run1-[0-2]-[0-9]{12}$`)
	for id := range ids {
		if !idRE.MatchString(id) {
			t.Errorf("delivery id %q, want PREFIX-CONN-SEQ with 12 digits of SEQ", id)
			break
		}
	}
	// SEQ is written least significant digit first: the first, second and
	// eleventh requests of a connection.
	for _, id := range []string{"run1-0-100000000000", "run1-2-200000000000", "run1-1-110000000000"} {
		if !ids[id] {
			t.Errorf("no request had the id %s", id)
		}
	}
}

// An answer that closes the connection is counted and the next request
// goes over a new one; answers other than 200 are failures that keep the
// connection; an answer the generator does not read (chunked) is a
// failure that says so.
func TestLoad_Answers(t *testing.T) {
	tests := []struct {
		name     string
		answer   string
		ok       bool
		want     string // in FirstError
		redialed bool   // every request on a new connection
	}{
		{"Keep-alive", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", true, "", false},
		{"Connection close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}", true, "", true},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}", true, "", true},
		{"HTTP/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\n{}", true, "", false},
		{"Body to the end", "HTTP/1.1 200 OK\r\n\r\n{}", true, "", true},
		{"Not 200", "HTTP/1.1 401 Unauthorized\r\ncontent-length: 15\r\n\r\n{\"error\":\"no\"}\n", false, "status 401", false},
		{"Chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", false, "only Content-Length bodies are read", true},
		{"Garbage", "SSH-2.0-OpenSSH\r\n\r\n", false, "not an HTTP/1.x status line", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := bench.Listen()
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			var accepted, requests atomic.Int64
			var wg sync.WaitGroup
			defer wg.Wait()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					accepted.Add(1)
					wg.Go(func() {
						defer c.Close()
						br := bufio.NewReader(c)
						for {
							r, err := http.ReadRequest(br)
							if err != nil {
								return
							}
							if _, err := io.Copy(io.Discard, r.Body); err != nil {
								return
							}
							requests.Add(1)
							if _, err := io.WriteString(c, tt.answer); err != nil || tt.redialed {
								return
							}
						}
					})
				}
			}()
			st, err := bench.Load{
				URL: "http://" + ln.Addr().String() + "/", Request: bench.NewGitHubRequest("s", 100), IDPrefix: "t", Conns: 2, Duration: 100 * time.Millisecond,
			}.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if n := requests.Load(); n < 4 {
				t.Fatalf("%d requests in 100 ms, want more", n)
			}
			if tt.ok && (st.OK == 0 || st.Failed != 0) || !tt.ok && (st.OK != 0 || st.Failed == 0) {
				t.Errorf("ok=%d failed=%d (%s), want them all %s", st.OK, st.Failed, st.FirstError, map[bool]string{true: "ok", false: "failed"}[tt.ok])
			}
			if !strings.Contains(st.FirstError, tt.want) {
				t.Errorf("first error %q, want it to say %q", st.FirstError, tt.want)
			}
			if a, n := accepted.Load(), requests.Load(); tt.redialed && a < n || !tt.redialed && a != 2 {
				t.Errorf("%d connections for %d requests, want %s", a, n, map[bool]string{true: "one each", false: "2"}[tt.redialed])
			}
		})
	}
}

// A run cancelled while its requests wait for answers returns at once.
func TestLoad_Cancel(t *testing.T) {
	ln, err := bench.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }() // never answers
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	st, err := bench.Load{URL: "http://" + ln.Addr().String() + "/", Request: bench.NewGitHubRequest("s", 100), Conns: 4, Duration: time.Minute}.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("returned %s after the start, want soon after the cancel at 200ms", d)
	}
	if st.OK != 0 || st.Failed != 4 || st.FirstError != "abandoned at the end of the run" {
		t.Errorf("ok=%d failed=%d (%q), want the 4 requests abandoned", st.OK, st.Failed, st.FirstError)
	}
}

// A server that refuses connections fails the run's requests without the
// generator spinning on it.
func TestLoad_Refused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	st, err := bench.Load{URL: "http://" + addr + "/", Request: bench.NewGitHubRequest("s", 100), Conns: 2, Duration: 100 * time.Millisecond}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.OK != 0 || st.Failed == 0 || st.Failed > 100 || !strings.Contains(st.FirstError, "refused") {
		t.Errorf("ok=%d failed=%d (%s), want a few failures saying the connection was refused", st.OK, st.Failed, st.FirstError)
	}
}

// The generator allocates nothing a request: what it costs the machine is
// taken from the server it measures. The server here allocates nothing a
// request either, so the process's allocations are the generator's.
func TestLoad_NoAllocations(t *testing.T) {
	ln, err := bench.Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	answer := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 21\r\n\r\n{\"status\":\"accepted\"}")
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					n := 0
					for {
						line, err := br.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(line) <= 2 {
							break
						}
						if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
							for _, d := range bytes.TrimSpace(v) {
								n = n*10 + int(d-'0')
							}
						}
					}
					if _, err := br.Discard(n); err != nil {
						return
					}
					if _, err := c.Write(answer); err != nil {
						return
					}
				}
			}()
		}
	}()
	l := bench.Load{URL: "http://" + ln.Addr().String() + "/hooks/github", Request: bench.NewGitHubRequest("s", 1024), IDPrefix: "t", Conns: 4, Duration: 300 * time.Millisecond}
	if _, err := l.Run(context.Background()); err != nil { // warm up
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	st, err := l.Run(context.Background())
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if st.OK < 1000 || st.Failed != 0 {
		t.Fatalf("ok=%d failed=%d (%s), want over 1,000 answers and no failure", st.OK, st.Failed, st.FirstError)
	}
	// A run's own allocations (its connections, buffers, histograms,
	// goroutines and timers) are a few hundred whatever its length.
	if n := after.Mallocs - before.Mallocs; n > 1000+uint64(st.OK)/10 {
		t.Errorf("%d allocations for %d requests, want a few hundred for the run and none a request", n, st.OK)
	}
}
