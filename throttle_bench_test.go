package main_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkThrottledSibling posts a burst of events to a source with two
// URL targets, "fast" and a sibling, and reports how fast "fast" got them
// all (fast/s) and what the sibling got meanwhile (sibling/s): with the
// sibling at rate = "100/s" (its backlog deferred in the store) "fast"
// must keep the speed it has beside an unlimited sibling. Each iteration
// is a fresh serve on a new store.
//
//	go test -run '^$' -bench BenchmarkThrottledSibling -benchtime 1x -count 3 .
func BenchmarkThrottledSibling(b *testing.B) {
	for _, sibling := range []string{"unlimited", "rate=100/s"} {
		b.Run("sibling="+sibling, func(b *testing.B) {
			const n = 10000
			var fastPerS, siblingPerS float64
			for range b.N {
				var fastN, sibN atomic.Int64
				fast := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { fastN.Add(1) }))
				sib := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { sibN.Add(1) }))
				text := deliveryConfig + fmt.Sprintf("\n[[target]]\nname = \"fast\"\nsource = \"shop\"\nurl = %q\n", fast.URL) +
					fmt.Sprintf("\n[[target]]\nname = \"sibling\"\nsource = \"shop\"\nurl = %q\n", sib.URL)
				if sibling != "unlimited" {
					text += "rate = \"100/s\"\n"
				}
				tm := MustRunMain(b, text, "")
				start := time.Now()
				var wg sync.WaitGroup
				for g := range 16 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := g; i < n; i += 16 {
							req, _ := http.NewRequest(http.MethodPost, tm.URL+"/hooks/shop", strings.NewReader(`{}`))
							req.Header.Set("X-Id", fmt.Sprint(i))
							resp, err := http.DefaultClient.Do(req)
							if err != nil {
								b.Error(err)
								return
							}
							resp.Body.Close()
						}
					}()
				}
				wg.Wait()
				for fastN.Load() < n {
					time.Sleep(time.Millisecond)
				}
				took := time.Since(start).Seconds()
				fastPerS += n / took
				siblingPerS += float64(sibN.Load()) / took
				tm.Close()
				fast.Close()
				sib.Close()
			}
			b.ReportMetric(fastPerS/float64(b.N), "fast/s")
			b.ReportMetric(siblingPerS/float64(b.N), "sibling/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}
