package postgres

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/postgres/pgtest"
	"hookbox/web"
)

// BenchmarkWeb_ListPage is sqlite's BenchmarkWeb_ListPage on PostgreSQL:
// the web UI's list pages over HOOKBOX_BENCH_EVENTS events (default
// 1,000,000), filled by INSERT … SELECT from generate_series.
func BenchmarkWeb_ListPage(b *testing.B) {
	n := 1000000
	if s := os.Getenv("HOOKBOX_BENCH_EVENTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	db, err := Open(ctx, pgtest.Schema(b, "hookbox_bench_", "the PostgreSQL benchmarks"), Options{Logger: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	t0 := time.Now()
	start := time.Now().Add(-time.Duration(n) * time.Millisecond).UnixMilli()
	for _, q := range []string{
		`INSERT INTO events (source, event_id, type, received_at, content_type, headers, body, body_size)
			SELECT 'stripe', 'evt_' || i, (ARRAY['invoice.paid','invoice.created','customer.updated','charge.refunded'])[i % 4 + 1],
				$2::bigint + i, 'application/json', '{"Content-Type":["application/json"]}', convert_to('{"id":"evt_' || i || '","object":"event"}', 'UTF8'), 36
			FROM generate_series(1, $1::bigint) i`,
		`INSERT INTO deliveries (event, target, status, attempts, run_at, created_at, done_at, last_error)
			SELECT id, 'web', CASE WHEN id % 1000 = 0 THEN 'dead' ELSE 'done' END, 1, received_at, received_at, received_at,
				CASE WHEN id % 1000 = 0 THEN 'status 500' ELSE '' END FROM events`,
		`INSERT INTO dead_letters (delivery, event, target, attempts, error, dead_at)
			SELECT d.id, d.event, d.target, 1, d.last_error, d.done_at FROM deliveries d WHERE d.status = 'dead'`,
		`ANALYZE`,
	} {
		var args []any
		if strings.HasPrefix(q, "INSERT INTO events ") {
			args = []any{n, start}
		}
		if _, err := db.pool.Exec(ctx, q, args...); err != nil {
			b.Fatalf("fill: %v", err)
		}
	}
	b.Logf("filled %d events in %v", n, time.Since(t0).Round(time.Millisecond))
	h := web.New(db, web.Options{AnyHost: true})
	for _, path := range []string{
		"/", "/api/events", "/?type=invoice.paid", "/?status=dead", "/?source=stripe", "/?q=evt_99999",
		"/?since=1h", "/?until=10m", fmt.Sprintf("/?cursor=%d", n/2), "/dead",
	} {
		b.Run(path, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/page")
		})
	}
}
