package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"hookbox/dedupe"
)

// openPlain opens an empty store in a temp dir, closed at the test's end.
func openPlain(t *testing.T) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "hookbox.db"), Options{Logger: zerolog.Nop()})
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
	n, err := temporaryTables(db.reader, insertEvent)
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
	plan, err := queryPlan(db.reader, sweepPayloadsSQL)
	if err != nil {
		t.Fatal(err)
	}
	if want := "SEARCH events USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"; len(plan) == 0 || plan[0] != want {
		t.Errorf("the payload sweep's plan:\n%s\nwant it to begin %q: one window of ids", strings.Join(plan, "\n"), want)
	}
}

// A source's listing reads the same events newest first whichever way it
// walks: through the source's key (a source with few events) or every
// event newest first (a common one).
func TestList_SourceBothWays(t *testing.T) {
	db := openPlain(t)
	ctx := context.Background()
	if err := db.w.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < 500)
			INSERT INTO events (source, event_id, received_at, body_size) SELECT CASE WHEN i % 7 = 0 THEN 'rare' ELSE 'common' END, 'e'||i, i, 0 FROM c`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	list := func(source string, few int) []int64 {
		t.Helper()
		old := fewEvents
		fewEvents = few
		defer func() { fewEvents = old }()
		var ids []int64
		for before := int64(0); ; {
			page, err := db.ListEvents(ctx, dedupe.Filter{Source: source, Limit: 30, Before: before})
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page {
				if e.Source != source {
					t.Fatalf("listing %s returned an event of %s", source, e.Source)
				}
				ids = append(ids, e.ID)
			}
			if len(page) < 30 {
				return ids
			}
			before = page[len(page)-1].ID
		}
	}
	for _, source := range []string{"rare", "common"} {
		byKey, walked := list(source, 1000), list(source, 1)
		if !slices.Equal(byKey, walked) || len(byKey) == 0 || !slices.IsSortedFunc(byKey, func(a, b int64) int { return int(b - a) }) {
			t.Errorf("%s: through the key %d events, walked %d; want the same, newest first", source, len(byKey), len(walked))
		}
	}
}
