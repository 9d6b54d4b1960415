// Command ceiling is the PostgreSQL ingest ceiling of BENCHMARKS.md: a
// plain Go HTTP server that does, per request, what hookbox's ingest does
// in the database and nothing else: in one transaction over a pgx pool,
// INSERT … ON CONFLICT (source, event_id) DO NOTHING into an events table
// of hookbox's shape, and a pending delivery when the event is new
// (-deliveries=false: the event only). No
// signature check, no routing, no metrics, no wake-up.
//
//	go run ./postgres/internal/ceiling -url 'postgres://…?search_path=s' [-conns 0]
//
// It creates its tables (ceiling_events, ceiling_deliveries) if missing,
// listens on a loopback port, prints "listening on http://ADDR" and serves
// until its stdin closes.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const schema = `
CREATE TABLE IF NOT EXISTS ceiling_events (
	id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, source text NOT NULL, event_id text NOT NULL,
	type text NOT NULL DEFAULT '', received_at bigint NOT NULL, content_type text NOT NULL DEFAULT '',
	headers jsonb, body bytea, body_size bigint NOT NULL, redeliveries bigint NOT NULL DEFAULT 0,
	UNIQUE (source, event_id));
CREATE TABLE IF NOT EXISTS ceiling_deliveries (
	id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, event bigint NOT NULL REFERENCES ceiling_events (id),
	target text NOT NULL, status text NOT NULL, run_at bigint NOT NULL, created_at bigint NOT NULL,
	UNIQUE (event, target));
CREATE INDEX IF NOT EXISTS ceiling_deliveries_due ON ceiling_deliveries (run_at, id) WHERE status IN ('pending', 'retrying', 'running');`

func main() {
	url := flag.String("url", "", "postgres:// URL")
	conns := flag.Int("conns", 0, "pool size (0: pgxpool's default, as hookbox)")
	deliveries := flag.Bool("deliveries", true, "insert a pending delivery with each new event")
	flag.Parse()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(*url)
	if err != nil {
		log.Fatal("ceiling: -url does not parse")
	}
	if *conns > 0 {
		cfg.MaxConns = int32(*conns)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := pool.Exec(ctx, schema); err != nil {
		log.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, `{"error":"body"}`, http.StatusRequestEntityTooLarge)
			return
		}
		id := r.Header.Get("X-GitHub-Delivery")
		now := time.Now().UnixMilli()
		dup := false
		err = pgx.BeginFunc(r.Context(), pool, func(tx pgx.Tx) error {
			var ev int64
			err := tx.QueryRow(r.Context(), `INSERT INTO ceiling_events (source, event_id, type, received_at, content_type, headers, body, body_size)
				VALUES ('github', $1, 'push', $2, 'application/json', '{}', $3, $4) ON CONFLICT (source, event_id) DO NOTHING RETURNING id`,
				id, now, body, len(body)).Scan(&ev)
			if err == pgx.ErrNoRows {
				dup = true
				_, err = tx.Exec(r.Context(), `UPDATE ceiling_events SET redeliveries = redeliveries + 1 WHERE source = 'github' AND event_id = $1`, id)
				return err
			}
			if err != nil || !*deliveries {
				return err
			}
			_, err = tx.Exec(r.Context(), `INSERT INTO ceiling_deliveries (event, target, status, run_at, created_at) VALUES ($1, 'sink', 'pending', $2, $2)`, ev, now)
			return err
		})
		if err != nil {
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"error":"store"}`, http.StatusServiceUnavailable)
			return
		}
		status := "accepted"
		if dup {
			status = "duplicate"
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"`+status+`","event_id":`+strconv.Quote(id)+"}\n")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second}
	go srv.Serve(ln)
	fmt.Printf("listening on http://%s\n", ln.Addr())
	io.Copy(io.Discard, os.Stdin)
	srv.Close()
	pool.Close()
}
