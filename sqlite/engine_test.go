package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"hookbox/internal/enginetest"
	"hookbox/sqlite"
)

// The SQLite engine has every behaviour of a store engine.
func TestEngine(t *testing.T) {
	enginetest.Run(t, func(t *testing.T) enginetest.Engine {
		db, err := sqlite.Open(filepath.Join(t.TempDir(), "hookbox.db"), sqlite.Options{Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}
