package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"hookbox/internal/enginetest"
	"hookbox/postgres"
)

// testURL is the database the PostgreSQL tests run in, each in a schema of
// its own, or skips the test without one.
func testURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("HOOKBOX_TEST_POSTGRES")
	if u == "" {
		t.Skip("set HOOKBOX_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable to run the PostgreSQL engine's tests")
	}
	return u
}

// freshSchema creates an empty schema in the test database, dropped when
// the test ends, and returns a URL whose connections use it.
func freshSchema(t *testing.T) string {
	t.Helper()
	base := testURL(t)
	ctx := context.Background()
	b := make([]byte, 6)
	rand.Read(b)
	schema := "hookbox_test_" + hex.EncodeToString(b)
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Error(err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
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
	testURL(t)
	enginetest.Run(t, func(t *testing.T) enginetest.Engine {
		return open(t, freshSchema(t), postgres.Options{Logger: zerolog.Nop()})
	})
}
