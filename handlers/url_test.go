package handlers_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/handlers"
)

// request is what a test server saw.
type request struct {
	method string
	header http.Header
	body   []byte
}

// mustServer starts a server on 127.0.0.1 that records each request on the returned
// channel and answers with h (200 if nil).
func mustServer(tb testing.TB, h http.HandlerFunc) (*httptest.Server, <-chan request) {
	tb.Helper()
	seen := make(chan request, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			tb.Errorf("server read body: %v", err)
		}
		select {
		case seen <- request{method: r.Method, header: r.Header.Clone(), body: body}:
		default:
		}
		if h != nil {
			h(w, r)
		}
	}))
	tb.Cleanup(srv.Close)
	return srv, seen
}

func mustError(tb testing.TB, err error) *handlers.Error {
	tb.Helper()
	var he *handlers.Error
	if !errors.As(err, &he) {
		tb.Fatalf("err=%v (%T), want *handlers.Error", err, err)
	}
	return he
}

func testDelivery() handlers.Delivery {
	return handlers.Delivery{
		EventID:     "evt_123",
		Source:      "stripe",
		Type:        "invoice.paid",
		Attempt:     3,
		ReceivedAt:  time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC),
		ContentType: "application/json; charset=utf-8",
		Body:        []byte("{\"id\":\"evt_123\",\"bin\":\"\xff\xfe\x00\x80\"}\r\n"),
	}
}

func TestURL_Deliver(t *testing.T) {
	t.Run("Forwards body and headers", func(t *testing.T) {
		srv, seen := mustServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, "thanks")
		})
		d := testDelivery()
		res, err := handlers.NewURL(srv.URL+"/hook", 5*time.Second).Deliver(context.Background(), d)
		if err != nil {
			t.Fatalf("Deliver: err=%v, want nil", err)
		}
		if res.Status != http.StatusAccepted || res.Output != "thanks" {
			t.Errorf("result status=%d output=%q, want %d %q", res.Status, res.Output, http.StatusAccepted, "thanks")
		}
		if res.Duration <= 0 {
			t.Errorf("duration=%v, want > 0", res.Duration)
		}
		got := <-seen
		if got.method != http.MethodPost {
			t.Errorf("method=%s, want POST", got.method)
		}
		if !bytes.Equal(got.body, d.Body) {
			t.Errorf("body=%q, want %q", got.body, d.Body)
		}
		for name, want := range map[string]string{
			"Content-Type":     d.ContentType,
			"Hookbox-Event-Id": "evt_123",
			"Hookbox-Source":   "stripe",
			"Hookbox-Attempt":  "3",
			"Idempotency-Key":  "stripe:evt_123",
			"User-Agent":       "hookbox",
		} {
			if v := got.header.Values(name); len(v) != 1 || v[0] != want {
				t.Errorf("header %s=%q, want [%q]", name, v, want)
			}
		}
	})

	t.Run("No Content-Type when empty", func(t *testing.T) {
		srv, seen := mustServer(t, nil)
		d := testDelivery()
		d.ContentType = ""
		if _, err := handlers.NewURL(srv.URL, 5*time.Second).Deliver(context.Background(), d); err != nil {
			t.Fatalf("Deliver: err=%v, want nil", err)
		}
		if v := (<-seen).header.Values("Content-Type"); len(v) != 0 {
			t.Errorf("Content-Type=%q, want none", v)
		}
	})

	t.Run("Control characters in header values", func(t *testing.T) {
		srv, seen := mustServer(t, nil)
		u := handlers.NewURL(srv.URL, 5*time.Second)
		for _, id := range []string{"evt\r\nX-Evil: 1", "evt\n", "evt\x00"} {
			d := testDelivery()
			d.EventID = id
			_, err := u.Deliver(context.Background(), d)
			if he := mustError(t, err); he.Permanent {
				t.Errorf("event id %q: permanent=true, want false (retried)", id)
			}
		}
		select {
		case r := <-seen:
			t.Errorf("server got a request with headers %v, want none", r.header)
		default:
		}
	})

	t.Run("Server error is retried", func(t *testing.T) {
		srv, _ := mustServer(t, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "boom", http.StatusInternalServerError)
		})
		res, err := handlers.NewURL(srv.URL, 5*time.Second).Deliver(context.Background(), testDelivery())
		he := mustError(t, err)
		if he.Msg != "status 500" || he.Permanent {
			t.Errorf("error msg=%q permanent=%v, want %q false", he.Msg, he.Permanent, "status 500")
		}
		if res.Status != 500 || res.Output != "boom\n" {
			t.Errorf("result status=%d output=%q, want 500 %q", res.Status, res.Output, "boom\n")
		}
	})

	t.Run("Client error is retried", func(t *testing.T) {
		srv, _ := mustServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
		})
		_, err := handlers.NewURL(srv.URL, 5*time.Second).Deliver(context.Background(), testDelivery())
		if he := mustError(t, err); he.Msg != "status 400" || he.Permanent {
			t.Errorf("error msg=%q permanent=%v, want %q false", he.Msg, he.Permanent, "status 400")
		}
	})

	t.Run("Permanent status", func(t *testing.T) {
		for _, tt := range []struct {
			status    int
			msg       string
			permanent bool
		}{
			{410, "status 410 (permanent_status)", true},
			{422, "status 422 (permanent_status)", true},
			{400, "status 400", false},
			{404, "status 404", false},
			{500, "status 500", false},
		} {
			srv, _ := mustServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
			})
			res, err := handlers.NewURL(srv.URL, 5*time.Second, 410, 422).Deliver(context.Background(), testDelivery())
			if he := mustError(t, err); he.Msg != tt.msg || he.Permanent != tt.permanent {
				t.Errorf("status %d: msg=%q permanent=%v, want %q %v", tt.status, he.Msg, he.Permanent, tt.msg, tt.permanent)
			}
			if res.Status != tt.status {
				t.Errorf("result status=%d, want %d", res.Status, tt.status)
			}
		}
	})

	t.Run("Redirect not followed", func(t *testing.T) {
		var hits atomic.Int32
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
		}))
		defer other.Close()
		srv, _ := mustServer(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL, http.StatusFound)
		})
		res, err := handlers.NewURL(srv.URL, 5*time.Second).Deliver(context.Background(), testDelivery())
		he := mustError(t, err)
		if res.Status != http.StatusFound || !strings.HasPrefix(he.Msg, "status 302") {
			t.Errorf("status=%d msg=%q, want 302 %q", res.Status, he.Msg, "status 302…")
		}
		other.Close() // waits for any request in flight
		if n := hits.Load(); n != 0 {
			t.Errorf("redirect target got %d requests, want 0", n)
		}
	})

	t.Run("Retry-After", func(t *testing.T) {
		now := time.Now()
		for _, tt := range []struct {
			name     string
			status   int
			header   string
			min, max time.Duration
		}{
			{"Seconds", 503, "120", 120 * time.Second, 120 * time.Second},
			{"HTTP date", 429, now.Add(time.Hour).UTC().Format(http.TimeFormat), time.Hour - 5*time.Second, time.Hour},
			{"Past date", 429, now.Add(-time.Hour).UTC().Format(http.TimeFormat), 0, 0},
			{"Negative", 503, "-5", 0, 0},
			{"Garbage", 503, "soon", 0, 0},
			{"Capped", 503, "99999999999", 24 * time.Hour, 24 * time.Hour},
			{"Beyond int64 is capped too", 503, "99999999999999999999", 24 * time.Hour, 24 * time.Hour},
			{"Far date capped", 429, now.Add(240 * time.Hour).UTC().Format(http.TimeFormat), 24 * time.Hour, 24 * time.Hour},
		} {
			t.Run(tt.name, func(t *testing.T) {
				srv, _ := mustServer(t, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Retry-After", tt.header)
					w.WriteHeader(tt.status)
				})
				_, err := handlers.NewURL(srv.URL, 5*time.Second).Deliver(context.Background(), testDelivery())
				he := mustError(t, err)
				if he.RetryAfter < tt.min || he.RetryAfter > tt.max {
					t.Errorf("RetryAfter=%v, want in [%v, %v]", he.RetryAfter, tt.min, tt.max)
				}
				if he.Permanent {
					t.Errorf("permanent=true, want false for status %d", tt.status)
				}
			})
		}
	})

	t.Run("Timeout", func(t *testing.T) {
		release := make(chan struct{})
		srv, _ := mustServer(t, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})
		defer close(release)
		const timeout = 200 * time.Millisecond
		start := time.Now()
		_, err := handlers.NewURL(srv.URL, timeout).Deliver(context.Background(), testDelivery())
		elapsed := time.Since(start)
		he := mustError(t, err)
		if he.Msg != "timeout after 200ms" || he.Permanent {
			t.Errorf("msg=%q permanent=%v, want %q false", he.Msg, he.Permanent, "timeout after 200ms")
		}
		if elapsed < timeout || elapsed > timeout+time.Second {
			t.Errorf("returned after %v, want about %v", elapsed, timeout)
		}
	})

	t.Run("Connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		res, err := handlers.NewURL("http://"+addr+"/", 5*time.Second).Deliver(context.Background(), testDelivery())
		he := mustError(t, err)
		if he.Msg != "connection refused" || he.Permanent {
			t.Errorf("msg=%q permanent=%v, want %q false", he.Msg, he.Permanent, "connection refused")
		}
		if res.Status != 0 {
			t.Errorf("status=%d, want 0", res.Status)
		}
	})

	t.Run("Closed without answering", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
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
				c.Read(make([]byte, 64<<10)) // the request, then hang up
				c.Close()
			}
		}()
		_, err = handlers.NewURL("http://"+ln.Addr().String()+"/", 5*time.Second).Deliver(context.Background(), testDelivery())
		he := mustError(t, err)
		if want := "the target closed the connection without answering"; he.Msg != want || he.Permanent {
			t.Errorf("msg=%q permanent=%v, want %q false", he.Msg, he.Permanent, want)
		}
	})

	t.Run("Huge response is bounded", func(t *testing.T) {
		srv, _ := mustServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			chunk := bytes.Repeat([]byte("x"), 64<<10)
			for range 160 { // 10 MiB
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		})
		res, err := handlers.NewURL(srv.URL, 5*time.Second).Deliver(context.Background(), testDelivery())
		mustError(t, err)
		if len(res.Output) > 4<<10+100 {
			t.Errorf("len(output)=%d, want <= %d", len(res.Output), 4<<10+100)
		}
		if !strings.HasPrefix(res.Output, strings.Repeat("x", 4<<10)) || !strings.Contains(res.Output, "bytes omitted") {
			t.Errorf("output=%.40q…%q, want 4 KiB of x and an omission marker", res.Output, res.Output[max(0, len(res.Output)-40):])
		}
	})

	t.Run("Context cancel aborts", func(t *testing.T) {
		arrived := make(chan struct{})
		srv, _ := mustServer(t, func(w http.ResponseWriter, r *http.Request) {
			close(arrived)
			<-r.Context().Done()
		})
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-arrived
			cancel()
		}()
		start := time.Now()
		_, err := handlers.NewURL(srv.URL, time.Minute).Deliver(ctx, testDelivery())
		he := mustError(t, err)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err=%v, want errors.Is context.Canceled", err)
		}
		if he.Msg != "canceled" {
			t.Errorf("msg=%q, want %q", he.Msg, "canceled")
		}
		if elapsed := time.Since(start); elapsed > 5*time.Second {
			t.Errorf("returned after %v, want promptly", elapsed)
		}
	})

	t.Run("Invalid URL", func(t *testing.T) {
		for _, raw := range []string{"", "ftp://example.com/x", "http://", "::not a url"} {
			_, err := handlers.NewURL(raw, time.Second).Deliver(context.Background(), testDelivery())
			if he := mustError(t, err); he.Permanent || !strings.HasPrefix(he.Msg, "invalid url") {
				t.Errorf("url %q: msg=%q permanent=%v, want %q false", raw, he.Msg, he.Permanent, "invalid url…")
			}
		}
	})
}

func TestURL_Post(t *testing.T) {
	srv, seen := mustServer(t, nil)
	body := []byte(`{"alert":"dead"}`)
	res, err := handlers.NewURL(srv.URL, 5*time.Second).Post(context.Background(), "application/json", body)
	if err != nil {
		t.Fatalf("Post: err=%v, want nil", err)
	}
	if res.Status != http.StatusOK {
		t.Errorf("status=%d, want 200", res.Status)
	}
	got := <-seen
	if !bytes.Equal(got.body, body) || got.header.Get("Content-Type") != "application/json" {
		t.Errorf("body=%q content-type=%q, want %q %q", got.body, got.header.Get("Content-Type"), body, "application/json")
	}
	if v := got.header.Get("Hookbox-Event-Id"); v != "" {
		t.Errorf("Hookbox-Event-Id=%q, want none on a plain POST", v)
	}
}

func BenchmarkURL_Deliver(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	u := handlers.NewURL(srv.URL, 5*time.Second)
	d := testDelivery()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := u.Deliver(ctx, d); err != nil {
			b.Fatal(err)
		}
	}
}
