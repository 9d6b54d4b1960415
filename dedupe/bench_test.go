package dedupe_test

import (
	"context"
	"net/http"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/dedupe"
	"hookbox/store"
)

// BenchmarkIngest stores b.N new 1 KiB events through concurrent Ingest
// calls on a real database (synchronous=full), as the receiver's handlers
// do, so the group-commit writer batches them.
func BenchmarkIngest(b *testing.B) {
	for _, par := range []int{1, 32} {
		b.Run("goroutines="+strconv.Itoa(par*runtime.GOMAXPROCS(0)), func(b *testing.B) {
			db, err := store.Open(filepath.Join(b.TempDir(), "hookbox.db"), store.Options{Logger: zerolog.Nop()})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			events := dedupe.New(db)
			body := make([]byte, 1024)
			for i := range body {
				body[i] = 'a' + byte(i%26)
			}
			header := http.Header{"Content-Type": {"application/json"}, "X-Github-Event": {"push"}}
			var seq atomic.Int64
			now := time.Now()
			b.SetParallelism(par)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					id := "evt-" + strconv.FormatInt(seq.Add(1), 10)
					_, err := events.Ingest(ctx, &dedupe.Event{Source: "github", EventID: id, Type: "push",
						ReceivedAt: now, ContentType: "application/json", Headers: header, Body: body})
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			st := db.Stats()
			if st.Commits > 0 {
				b.ReportMetric(float64(st.Writes)/float64(st.Commits), "writes/commit")
			}
		})
	}
}
