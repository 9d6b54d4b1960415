package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/web"
)

// fillEvents stores n events through multi-row inserts, each with one
// delivery to "web": done, but every thousandth dead (with its dead
// letter). Four types in turn; ids evt_1 … evt_n; one a millisecond up
// to now. Minutes of ingest take seconds this way.
func fillEvents(tb testing.TB, db *DB, n int) {
	tb.Helper()
	start := time.Now().Add(-time.Duration(n) * time.Millisecond).UnixMilli()
	const batch = 100000
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		err := db.w.write(context.Background(), func(tx *sql.Tx) error {
			if _, err := tx.Exec(`INSERT INTO events (source, event_id, type, received_at, content_type, headers, body, body_size)
				WITH RECURSIVE c(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM c WHERE i < ?)
				SELECT 'stripe', 'evt_' || i, CASE i % 4 WHEN 0 THEN 'invoice.paid' WHEN 1 THEN 'invoice.created' WHEN 2 THEN 'customer.updated' ELSE 'charge.refunded' END,
					? + i, 'application/json', CAST('{"Content-Type":["application/json"]}' AS BLOB), CAST('{"id":"evt_' || i || '","object":"event"}' AS BLOB), 36 FROM c`,
				lo+1, hi, start); err != nil {
				return err
			}
			if _, err := tx.Exec(`INSERT INTO deliveries (event, target, status, attempts, run_at, created_at, done_at, last_error)
				SELECT id, 'web', CASE WHEN id % 1000 = 0 THEN 'dead' ELSE 'done' END, 1, received_at, received_at, received_at,
					CASE WHEN id % 1000 = 0 THEN 'status 500' ELSE '' END FROM events WHERE id > ? AND id <= ?`, lo, hi); err != nil {
				return err
			}
			_, err := tx.Exec(`INSERT INTO dead_letters (delivery, event, target, attempts, error, dead_at)
				SELECT d.id, d.event, d.target, 1, d.last_error, d.done_at FROM deliveries d WHERE d.status = 'dead' AND d.event > ? AND d.event <= ?`, lo, hi)
			return err
		})
		if err != nil {
			tb.Fatalf("fill events: %v", err)
		}
	}
}

// BenchmarkWeb_ListPage is the web UI's event list (and the API's) over a
// store of HOOKBOX_BENCH_EVENTS events (default 1,000,000): the server's
// time to render the first page, 50 events, with each filter.
func BenchmarkWeb_ListPage(b *testing.B) {
	n := 1000000
	if s := os.Getenv("HOOKBOX_BENCH_EVENTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	db, err := Open(filepath.Join(b.TempDir(), "hookbox.db"), Options{Logger: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	t0 := time.Now()
	fillEvents(b, db, n)
	b.Logf("filled %d events in %v", n, time.Since(t0).Round(time.Millisecond))
	h := web.New(db, web.Options{AnyHost: true})
	for _, path := range []string{
		"/", "/api/events", "/?type=invoice.paid", "/?status=dead", "/?source=stripe", "/?q=evt_99999", "/?q=evt_",
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
