package dedupe

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"hookbox/internal/sqlplan"
	"hookbox/store"
)

// openPlain opens an empty store in a temp dir, closed at the test's end.
func openPlain(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "hookbox.db"), store.Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// The event insert runs once per accepted webhook inside the single writer:
// it must not build a temporary b-tree (as RETURNING does) on every run.
func TestInsertEventBuildsNoTemporaryTable(t *testing.T) {
	db := openPlain(t)
	n, err := sqlplan.TemporaryTables(db.Reader(), insertEvent)
	if err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		t.Errorf("the event insert builds %d temporary b-tree(s) on every run", n)
	}
}

// The payload sweep holds the writer while it looks for events to sweep:
// each write must examine one window of ids through the table's key, not
// walk from the oldest event past the weeks of swept ones kept for dedupe,
// which every batch would pass again.
func TestSweepExaminesOneWindowAWrite(t *testing.T) {
	db := openPlain(t)
	plan, err := sqlplan.Plan(db.Reader(), sweepPayloadsSQL)
	if err != nil {
		t.Fatal(err)
	}
	if want := "SEARCH events USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"; len(plan) == 0 || plan[0] != want {
		t.Errorf("the payload sweep's plan:\n%s\nwant it to begin %q: one window of ids", strings.Join(plan, "\n"), want)
	}
}
