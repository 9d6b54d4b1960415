package receiver

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/rs/zerolog"

	"hookbox/provider"
)

// benchBody is a 1 KiB JSON webhook with its id and type at the top level.
var benchBody = func() []byte {
	b := []byte(`{"id":"evt_1NfLz2","type":"invoice.paid","data":{"object":{"note":"`)
	b = append(b, bytes.Repeat([]byte("x"), 1024-len(b)-4)...)
	return append(b, `"}}}`...)
}()

// benchStore accepts every event and stores nothing.
type benchStore struct{}

func (benchStore) Ingest(context.Context, *Event) (Result, error) { return Result{}, nil }

// BenchmarkServeHTTP is a whole signed GitHub request through the handler
// against a store that stores nothing: routing, body read, HMAC, id and type
// extraction, header copy and the JSON answer.
func BenchmarkServeHTTP(b *testing.B) {
	const secret = "bench-secret"
	src, err := NewSource("github", 0, provider.Options{Scheme: "github", Secrets: []string{secret}})
	if err != nil {
		b.Fatal(err)
	}
	s := New(Config{
		Sources: []Source{src},
		Logger:  zerolog.Nop(),
	}, benchStore{})
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(benchBody)
	sig := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	b.SetBytes(int64(len(benchBody)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		req := httptest.NewRequest(http.MethodPost, "/hooks/github", bytes.NewReader(benchBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-GitHub-Delivery", "delivery-"+strconv.Itoa(i))
		req.Header.Set("X-Hub-Signature-256", sig)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status=%d, want 200: %s", w.Code, w.Body)
		}
	}
}
