// Package admin is hookbox's operators' listener: GET /metrics, and the
// web UI and JSON API mounted on it, behind an optional bearer token. It
// is a listener of its own, apart from the webhook listener that faces
// the senders; the local sink serves its routes on the sink's loopback
// listener instead (Handler).
package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Config configures a Server.
type Config struct {
	// Token, when set, is required on every request as
	// "Authorization: Bearer <Token>". Never logged.
	Token  string
	Logger zerolog.Logger
}

// Server serves the admin routes. Until a handler is mounted at "/" or
// "/api/", those paths answer 404.
type Server struct {
	mux   *http.ServeMux
	token [sha256.Size]byte
	auth  bool
	http  *http.Server
	ln    net.Listener
	log   zerolog.Logger
}

// New returns a server with no routes yet.
func New(cfg Config) *Server {
	s := &Server{mux: http.NewServeMux(), log: cfg.Logger}
	if cfg.Token != "" {
		s.auth, s.token = true, sha256.Sum256([]byte(cfg.Token))
	}
	s.http = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(errorLog{cfg.Logger}, "", 0),
	}
	return s
}

// Mount serves h at pattern (a net/http ServeMux pattern: "/metrics",
// "/api/", "GET /api/health", …), behind the token. It panics, as
// ServeMux does, on a pattern mounted twice.
func (s *Server) Mount(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Handler is the admin routes behind the token check: what the admin
// listener serves, and what the local sink serves beside its webhooks.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.auth && !s.authorized(r) {
			// Nothing else: no route, no hint of what exists.
			w.Header().Set("WWW-Authenticate", `Bearer realm="hookbox"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		s.mux.ServeHTTP(w, r)
	})
}

// authorized compares the request's bearer token with the configured one
// in constant time: both are hashed first, so that not even the length
// shows.
func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(got[:], s.token[:]) == 1
}

// Listen binds addr, so that a bind error surfaces before anything starts.
func (s *Server) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("admin listen %s: %w", addr, err)
	}
	s.ln = ln
	return nil
}

// Addr is the bound address, nil before Listen.
func (s *Server) Addr() net.Addr {
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Serve serves until Shutdown; it returns nil after a clean shutdown.
func (s *Server) Serve() error {
	if err := s.http.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("admin serve: %w", err)
	}
	return nil
}

// Unbind closes the listener of a server that never got to Serve.
func (s *Server) Unbind() error {
	if s.ln == nil {
		return nil
	}
	return s.ln.Close()
}

// Shutdown stops accepting and waits for requests under way until ctx
// ends, then closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	if ctx.Err() != nil {
		s.http.Close()
		return nil
	}
	return err
}

// errorLog writes net/http's error lines as warnings.
type errorLog struct{ log zerolog.Logger }

func (l errorLog) Write(p []byte) (int, error) {
	l.log.Warn().Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}
