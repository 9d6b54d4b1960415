package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// NewHTTPServer returns an http.Server with the same timeouts hookbox's
// receiver uses, so that the bare server differs only in what it does.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}

// Bare is the ceiling: it reads the whole body (up to 1 MiB) and answers 200
// with the same JSON hookbox sends, storing nothing and checking nothing.
func Bare() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, `{"error":"body"}`, http.StatusRequestEntityTooLarge)
			return
		}
		_ = body
		id := r.Header.Get(IDHeader)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{"status":"accepted","event_id":`+strconv.Quote(id)+"}\n")
	})
}

// Listen binds a loopback port: bench servers never listen beyond loopback.
func Listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return ln, nil
}

// Sink is a URL target that counts deliveries, once per distinct
// Hookbox-Event-Id, and remembers when the last new one arrived.
type Sink struct {
	mu   sync.Mutex
	seen map[string]struct{}
	last time.Time
	srv  *http.Server
	ln   net.Listener
}

// StartSink serves a sink on a loopback port until Close.
func StartSink() (*Sink, error) {
	ln, err := Listen()
	if err != nil {
		return nil, err
	}
	s := &Sink{seen: map[string]struct{}{}, ln: ln}
	s.srv = NewHTTPServer(s)
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is where to deliver.
func (s *Sink) URL() string { return "http://" + s.ln.Addr().String() + "/sink" }

func (s *Sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	id := r.Header.Get("Hookbox-Source") + ":" + r.Header.Get("Hookbox-Event-Id")
	now := time.Now()
	s.mu.Lock()
	if _, ok := s.seen[id]; !ok {
		s.seen[id] = struct{}{}
		s.last = now
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// Counts returns the distinct events delivered and when the last one
// arrived.
func (s *Sink) Counts() (distinct int64, last time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.seen)), s.last
}

// Reset forgets every delivery.
func (s *Sink) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = map[string]struct{}{}
	s.last = time.Time{}
}

// Close stops the sink.
func (s *Sink) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// WaitFor polls cond every 10 ms until it holds (true) or ctx ends (false).
func WaitFor(ctx context.Context, cond func() bool) bool {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}
