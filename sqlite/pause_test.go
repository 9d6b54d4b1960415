package sqlite

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/queue"
)

// A store made before pause existed (its CHECK knows no 'paused') takes
// the migration: its queued deliveries can be paused, the CHECK still
// refuses what it refused, and the schema stays sound.
func TestStoreBeforePauseUpgrades(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookbox.db")
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(wal)")
	if err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	if _, err := raw.Exec(`CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT`); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if name >= "migrations/0008" {
			break
		}
		buf, err := fs.ReadFile(migrationFS, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Exec(string(buf)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := raw.Exec(`INSERT INTO migrations VALUES (?, 0)`, name); err != nil {
			t.Fatal(err)
		}
	}
	for _, stmt := range []string{
		`INSERT INTO events (id, source, event_id, received_at, body, body_size) VALUES (1, 'github', 'e1', 0, x'7b7d', 2)`,
		`INSERT INTO deliveries (event, target, status, run_at, created_at) VALUES (1, 'sink', 'pending', 0, 0)`,
	} {
		if _, err := raw.Exec(stmt); err != nil {
			t.Fatalf("%.40s: %v", stmt, err)
		}
	}
	if _, err := raw.Exec(`UPDATE deliveries SET status = 'paused'`); err == nil || !strings.Contains(err.Error(), "CHECK") {
		t.Fatalf("the old schema took 'paused' (%v): this test no longer starts from a store before pause", err)
	}
	raw.Close()

	db, err := Open(path, Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	r, err := db.Pause(ctx, "sink", time.Now())
	if err != nil || r.Deliveries != 1 {
		t.Fatalf("pause on the upgraded store: %+v %v, want 1 held", r, err)
	}
	ds, err := db.Deliveries(ctx, []int64{1})
	if err != nil || len(ds[1]) != 1 || ds[1][0].Status != queue.Paused {
		t.Fatalf("deliveries %+v %v, want the one paused", ds, err)
	}
	err = db.w.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO deliveries (event, target, status, run_at, created_at) VALUES (1, 'other', 'bogus', 0, 0)`)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "CHECK") {
		t.Errorf("a bogus status on the upgraded store: err=%v, want a CHECK failure", err)
	}
	// A connection opened afterwards (a command's) reads the new CHECK.
	again, err := Open(path, Options{Logger: zerolog.Nop(), NoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if r, err := again.Resume(ctx, "sink", time.Now()); err != nil || r.Deliveries != 1 {
		t.Fatalf("resume from another connection: %+v %v, want 1 released", r, err)
	}
	if r, err := again.Pause(ctx, "sink", time.Now()); err != nil || r.Deliveries != 1 {
		t.Fatalf("pause from another connection: %+v %v, want 1 held", r, err)
	}
	var ic string
	if err := db.reader.QueryRow(`PRAGMA integrity_check`).Scan(&ic); err != nil || ic != "ok" {
		t.Errorf("integrity_check = %q (%v), want ok", ic, err)
	}
}
