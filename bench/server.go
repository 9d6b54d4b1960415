package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
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
