package postgres_test

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"hookbox/internal/enginetest"
	"hookbox/postgres"
	"hookbox/postgres/pgtest"
)

// BenchmarkLaneComplete is enginetest.BenchLaneComplete on PostgreSQL, a
// schema of its own for each run: a fifo target's heads over 1,000 keys
// claimed and completed at once, each promoting its lane's next delivery.
func BenchmarkLaneComplete(b *testing.B) {
	enginetest.BenchLaneComplete(b, func(b *testing.B) enginetest.Engine {
		db, err := postgres.Open(context.Background(), pgtest.Schema(b, "hookbox_bench_", "the PostgreSQL benchmarks"), postgres.Options{Logger: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		return db
	})
}
