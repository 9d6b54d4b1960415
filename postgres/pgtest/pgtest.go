// Package pgtest gives tests that need PostgreSQL a schema of their own in
// the database HOOKBOX_TEST_POSTGRES names, dropped when the test ends.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Env names the variable holding the test database's URL.
const Env = "HOOKBOX_TEST_POSTGRES"

// Schema creates an empty schema named prefix and random hex in the test
// database, dropped when tb ends, and returns a URL whose connections use
// it. Without Env it skips tb, saying how to run it: what names the tests
// being skipped.
func Schema(tb testing.TB, prefix, what string) string {
	tb.Helper()
	base := os.Getenv(Env)
	if base == "" {
		tb.Skipf("set %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable to run %s", Env, what)
	}
	ctx := context.Background()
	b := make([]byte, 6)
	rand.Read(b)
	schema := prefix + hex.EncodeToString(b)
	exec := func(sql string) error {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec(`CREATE SCHEMA ` + schema); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := exec(`DROP SCHEMA ` + schema + ` CASCADE`); err != nil {
			tb.Error(err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
