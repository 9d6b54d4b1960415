package metrics_test

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
	"time"

	"github.com/rs/zerolog"

	"hookbox/admission"
	"hookbox/metrics"
	"hookbox/provider"
	"hookbox/receiver"
)

type nopStore struct{}

func (nopStore) Ingest(context.Context, *receiver.Event) (receiver.Result, error) {
	return receiver.Result{}, nil
}

// BenchmarkReceiver is a whole signed request through the receiver
// against a store that stores nothing, without metrics and admission
// (plain) and with them (observed: the answer counted by source and
// result, its latency in the histogram, the budget's verdict asked): what
// they add to each ack, without the store's fsync that dwarfs both.
func BenchmarkReceiver(b *testing.B) {
	const secret = "bench-secret"
	body := bytes.Repeat([]byte("x"), 1024)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	sig := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	for _, observed := range []bool{false, true} {
		name := "plain"
		if observed {
			name = "observed"
		}
		b.Run(name, func(b *testing.B) {
			src, err := receiver.NewSource("github", 0, provider.Options{Scheme: "github", Secrets: []string{secret}})
			if err != nil {
				b.Fatal(err)
			}
			cfg := receiver.Config{Sources: []receiver.Source{src}, Logger: zerolog.Nop()}
			if observed {
				m := metrics.New(time.Now)
				m.Init([]string{"github"}, nil)
				budget := &admission.Budget{MaxQueued: 1000, Waiting: func(context.Context) (int64, error) { return 0, nil }, Interval: time.Hour}
				budget.Start(context.Background())
				defer budget.Stop()
				cfg.Observe, cfg.Admit = m.ObserveAnswer, budget.Admit
			}
			s := receiver.New(cfg, nopStore{})
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				req := httptest.NewRequest(http.MethodPost, "/hooks/github", bytes.NewReader(body))
				req.Header.Set("X-GitHub-Event", "push")
				req.Header.Set("X-GitHub-Delivery", "delivery-"+strconv.Itoa(i))
				req.Header.Set("X-Hub-Signature-256", sig)
				w := httptest.NewRecorder()
				s.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("status=%d: %s", w.Code, w.Body)
				}
			}
		})
	}
}
