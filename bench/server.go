package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"syscall"
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

// StartFunc starts a server for Serve on a loopback address and returns
// that address and the function that stops the server.
type StartFunc func(ctx context.Context) (addr string, stop func() error, err error)

// StartBare serves Bare on a loopback port: the bare server's StartFunc.
func StartBare(context.Context) (addr string, stop func() error, err error) {
	ln, err := Listen()
	if err != nil {
		return "", nil, err
	}
	srv := NewHTTPServer(Bare())
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return srv.Shutdown(ctx)
	}, nil
}

// Serve is the life of a bench server, the child process that Run starts
// (`hookbox bench-server`): it starts the server, writes a CPU profile of
// the serving time to cpuprofile unless that is "", prints ReadyPrefix and
// the address on stdout, and stops the server when stdin closes (Child.Stop
// closes it, and so does the parent's death), on SIGINT or SIGTERM, or when
// ctx ends. It returns start's error, the profile's or stop's.
func Serve(ctx context.Context, start StartFunc, cpuprofile string, stdin io.Reader, stdout io.Writer) error {
	addr, stop, err := start(ctx)
	if err != nil {
		return err
	}
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			stop()
			return fmt.Errorf("cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			stop()
			return fmt.Errorf("cpuprofile: %w", err)
		}
	}
	fmt.Fprintln(stdout, ReadyPrefix+addr)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(eof)
	}()
	select {
	case <-eof:
	case <-sigs:
	case <-ctx.Done():
	}
	if cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	if err := stop(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
