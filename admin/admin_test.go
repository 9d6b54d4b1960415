package admin_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"hookbox/admin"
)

func TestServer_Token(t *testing.T) {
	s := admin.New(admin.Config{Token: "s3cret-token", Logger: zerolog.Nop()})
	s.Mount("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "figures\n") }))
	h := s.Handler()
	for _, tc := range []struct {
		name, auth string
		want       int
	}{
		{"No header", "", http.StatusUnauthorized},
		{"Wrong token", "Bearer s3cret-tokeN", http.StatusUnauthorized},
		{"Prefix of the token", "Bearer s3cret", http.StatusUnauthorized},
		{"Token and more", "Bearer s3cret-token2", http.StatusUnauthorized},
		{"Basic scheme", "Basic s3cret-token", http.StatusUnauthorized},
		{"Token without scheme", "s3cret-token", http.StatusUnauthorized},
		{"Right token", "Bearer s3cret-token", http.StatusOK},
		{"Scheme in lower case", "bearer s3cret-token", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/metrics", "/api/events", "/"} {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				if tc.auth != "" {
					req.Header.Set("Authorization", tc.auth)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				want := tc.want
				if want == http.StatusOK && path != "/metrics" {
					want = http.StatusNotFound // nothing mounted there
				}
				if rec.Code != want {
					t.Errorf("GET %s with %q: %d, want %d", path, tc.auth, rec.Code, want)
				}
				body := rec.Body.String()
				if rec.Code == http.StatusUnauthorized && (body != "unauthorized\n" || strings.Contains(body, "s3cret")) {
					t.Errorf("401 body %q, want only \"unauthorized\"", body)
				}
			}
		})
	}
}

func TestServer_NoToken(t *testing.T) {
	s := admin.New(admin.Config{Logger: zerolog.Nop()})
	s.Mount("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "figures\n") }))
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != "figures\n" {
		t.Errorf("GET /metrics without a token configured: %d %q, want 200", rec.Code, rec.Body.String())
	}
}
