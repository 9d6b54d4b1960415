package postgres_test

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"hookbox/internal/enginetest"
	"hookbox/postgres"
	"hookbox/postgres/pgtest"
)

// freshSchema is a schema of its own for a test of the engine.
func freshSchema(t *testing.T) string {
	t.Helper()
	return pgtest.Schema(t, "hookbox_test_", "the PostgreSQL engine's tests")
}

func open(t *testing.T, u string, o postgres.Options) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), u, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// The PostgreSQL engine has every behaviour of a store engine.
func TestEngine(t *testing.T) {
	freshSchema(t) // skips here, once, without a test database
	enginetest.Run(t, func(t *testing.T) enginetest.Engine {
		return open(t, freshSchema(t), postgres.Options{Logger: zerolog.Nop()})
	})
}
