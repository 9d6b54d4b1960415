package dedupe

import (
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"hookbox/internal/sqlplan"
	"hookbox/store"
)

// The event insert runs once per accepted webhook inside the single writer:
// it must not build a temporary b-tree (as RETURNING does) on every run.
func TestInsertEventBuildsNoTemporaryTable(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "hookbox.db"), store.Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n, err := sqlplan.TemporaryTables(db.Reader(), insertEvent)
	if err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		t.Errorf("the event insert builds %d temporary b-tree(s) on every run", n)
	}
}
