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

func BenchmarkExtractID(b *testing.B) {
	h := http.Header{}
	h.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	for _, tc := range []struct{ name, loc string }{
		{"header", "header:X-GitHub-Delivery"},
		{"json", "json:id"},
		{"json-nested", "json:data.object.note"},
		{"body-sha256", "body-sha256"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			loc, err := ParseLocation(tc.loc)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				// A fresh lazy decoder per request, as read does.
				if _, err := loc.extract(h, benchBody, lazyDoc(benchBody), true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchStore accepts every event and stores nothing.
type benchStore struct{}

func (benchStore) Ingest(context.Context, *Event) (Result, error) { return Result{}, nil }

// BenchmarkServeHTTP is a whole signed GitHub request through the handler
// against a store that stores nothing: routing, body read, HMAC, id and type
// extraction, header copy and the JSON answer.
func BenchmarkServeHTTP(b *testing.B) {
	const secret = "bench-secret"
	v, err := provider.New(provider.Options{Scheme: "github", Secrets: []string{secret}})
	if err != nil {
		b.Fatal(err)
	}
	id, _ := ParseLocation("header:X-GitHub-Delivery")
	typ, _ := ParseLocation("header:X-GitHub-Event")
	s := New(Config{
		Sources: []Source{{Name: "github", Verifier: v, EventID: id, EventType: typ}},
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
