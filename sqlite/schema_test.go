package sqlite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/queue"
)

// hotStatements run once per delivery or event.
var hotStatements = map[string]string{
	"enqueue": enqueueSQL, "done": doneSQL, "retry": retrySQL, "dead": deadSQL,
	"release": releaseSQL, "attempt": attemptSQL,
}

// The statements run once per delivery must not build a temporary b-tree:
// an IN list of three or more values in a CHECK constraint or a partial
// index condition makes SQLite build and free one on every row written,
// which cost a fifth of the writer's time per delivery.
func TestHotStatementsBuildNoTemporaryTable(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "hookbox.db"), Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for name, query := range hotStatements {
		n, err := temporaryTables(db.reader, query)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n > 0 {
			t.Errorf("%s builds %d temporary b-tree(s) on every run: %s", name, n, query)
		}
	}
}

// A store created by the first schema, whose status tests were IN lists,
// is migrated so that the claim, which names the due index, still works,
// and its queued deliveries are claimed as before.
func TestStoreFromInListSchemaUpgrades(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookbox.db")
	schema, err := os.ReadFile("testdata/0001_init_in_lists.sql")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(wal)")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, stmt := range []string{
		`CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT`,
		string(schema),
		`INSERT INTO migrations VALUES ('migrations/0001_init.sql', 0)`,
		`INSERT INTO events (id, source, event_id, received_at, body, body_size) VALUES (1, 'github', 'e1', 0, x'7b7d', 2)`,
		`INSERT INTO deliveries (event, target, status, run_at, created_at) VALUES (1, 'sink', 'pending', 0, 0)`,
	} {
		if _, err := raw.Exec(stmt); err != nil {
			t.Fatalf("%.40s: %v", stmt, err)
		}
	}
	// The old schema does build them: the check below can see one.
	if n, err := temporaryTables(raw, doneSQL); err != nil || n == 0 {
		t.Fatalf("the completion on the old schema: %d temporary b-tree(s) (%v), want some", n, err)
	}
	raw.Close()

	db, err := Open(path, Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var index string
	if err := db.reader.QueryRow(`SELECT sql FROM sqlite_schema WHERE name = 'deliveries_due'`).Scan(&index); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(index, " IN (") {
		t.Errorf("due index not rebuilt: %s", index)
	}
	// Its CHECK constraints were rewritten too: no hot statement builds a
	// temporary b-tree on the upgraded store, and the checks still hold.
	for name, query := range hotStatements {
		if n, err := temporaryTables(db.reader, query); err != nil || n > 0 {
			t.Errorf("%s on the upgraded store: %d temporary b-tree(s) (%v)", name, n, err)
		}
	}
	err = db.w.write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO deliveries (event, target, status, run_at, created_at) VALUES (1, 'other', 'bogus', 0, 0)`)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "CHECK") {
		t.Errorf("a bogus status on the upgraded store: err=%v, want a CHECK failure", err)
	}
	// It ends up with the indexes of a store created now, no more, no less.
	fresh, err := Open(filepath.Join(t.TempDir(), "fresh.db"), Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if got, want := indexes(t, db), indexes(t, fresh); got != want {
		t.Errorf("indexes of the upgraded store:\n%s\nwant those of a new store:\n%s", got, want)
	}
	var ic string
	if err := db.reader.QueryRow(`PRAGMA integrity_check`).Scan(&ic); err != nil || ic != "ok" {
		t.Errorf("integrity_check = %q (%v), want ok", ic, err)
	}
	jobs, err := db.Claim(context.Background(), 10, time.Minute, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].EventID != "e1" || string(jobs[0].Body) != "{}" {
		t.Fatalf("claimed %+v, want the one queued delivery of e1", jobs)
	}
	if err := db.Complete(context.Background(), jobs[0], queue.Finish{Attempt: queue.Attempt{Number: 1, StartedAt: now, Outcome: "ok"}}, now); err != nil {
		t.Fatal(err)
	}
	if due, ok, err := db.NextDue(context.Background(), nil); err != nil || ok {
		t.Fatalf("after completion: next due %v %v %v, want none", due, ok, err)
	}
}

// indexes lists a store's index definitions, one a line, by name.
func indexes(t *testing.T, db *DB) string {
	t.Helper()
	rows, err := db.reader.Query(`SELECT name || ': ' || coalesce(sql, '(automatic)') FROM sqlite_schema WHERE type = 'index' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, "\n")
}
