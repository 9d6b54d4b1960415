package sqlite_test

import (
	"path/filepath"
	"testing"

	"hookbox/internal/enginetest"
	"hookbox/sqlite"
)

// BenchmarkLaneComplete is enginetest.BenchLaneComplete on SQLite: a fifo
// target's heads over 1,000 keys claimed and completed at once, each
// promoting its lane's next delivery.
func BenchmarkLaneComplete(b *testing.B) {
	enginetest.BenchLaneComplete(b, func(b *testing.B) enginetest.Engine {
		db, err := sqlite.Open(filepath.Join(b.TempDir(), "hookbox.db"), benchOptions())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		return db
	})
}
