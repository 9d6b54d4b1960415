package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"
)

// MustOpen opens a store in a temp dir and closes it when the test ends.
func MustOpen(tb testing.TB, o Options) *DB {
	tb.Helper()
	o.Logger = zerolog.Nop()
	db, err := Open(filepath.Join(tb.TempDir(), "hookbox.db"), o)
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// pragma reads a pragma on the writer connection.
func pragma(tb testing.TB, db *DB, name string) string {
	tb.Helper()
	var v string
	err := db.w.write(context.Background(), func(tx *sql.Tx) error {
		return tx.QueryRow(`PRAGMA ` + name).Scan(&v)
	})
	if err != nil {
		tb.Fatalf("pragma %s: %v", name, err)
	}
	return v
}

func TestOpen_Gates(t *testing.T) {
	for _, c := range []struct {
		synchronous string
		want        string
	}{
		{"", "2"}, // default full
		{"full", "2"},
		{"normal", "1"},
	} {
		t.Run("Synchronous "+c.synchronous, func(t *testing.T) {
			db := MustOpen(t, Options{Synchronous: c.synchronous})
			if got := pragma(t, db, "synchronous"); got != c.want {
				t.Fatalf("synchronous=%s, want %s", got, c.want)
			}
			if got := pragma(t, db, "journal_mode"); got != "wal" {
				t.Fatalf("journal_mode=%s, want wal", got)
			}
			if got := pragma(t, db, "busy_timeout"); got == "0" {
				t.Fatalf("busy_timeout=%s, want > 0", got)
			}
			if got := pragma(t, db, "foreign_keys"); got != "1" {
				t.Fatalf("foreign_keys=%s, want 1", got)
			}
			var mode string
			if err := db.reader.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
				t.Fatalf("reader journal_mode=%q err=%v, want wal", mode, err)
			}
			if _, err := db.reader.Exec(`CREATE TABLE nope (x INTEGER)`); err == nil {
				t.Fatalf("the read pool accepted a write")
			}
		})
	}
	t.Run("Not a database", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "notes.txt")
		if err := os.WriteFile(path, []byte(strings.Repeat("not sqlite\n", 1000)), 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := Open(path, Options{Logger: zerolog.Nop()})
		if err == nil {
			db.Close()
			t.Fatal("open of a text file succeeded, want an error")
		}
		for _, want := range []string{path, "file is not a database", "store.path"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	})
	t.Run("Invalid synchronous", func(t *testing.T) {
		db, err := Open(filepath.Join(t.TempDir(), "hookbox.db"), Options{Synchronous: "sometimes", Logger: zerolog.Nop()})
		if err == nil {
			db.Close()
			t.Fatal("open with synchronous=sometimes succeeded, want an error")
		}
		if !strings.Contains(err.Error(), "sometimes") {
			t.Fatalf("error %q does not name the value", err)
		}
	})
}

func TestOpen_MigrationsIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookbox.db")
	ctx := context.Background()
	db, err := Open(path, Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	err = db.w.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO events (source, event_id, received_at, body, body_size) VALUES ('s', 'e1', 0, x'00', 1)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var applied int
	if err := db.reader.QueryRow(`SELECT COUNT(*) FROM migrations`).Scan(&applied); err != nil || applied == 0 {
		t.Fatalf("migrations recorded=%d err=%v, want at least 1", applied, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	for range 2 {
		db, err = Open(path, Options{Logger: zerolog.Nop()})
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		var n, again int
		if err := db.reader.QueryRow(`SELECT COUNT(*) FROM events`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("events after reopen=%d err=%v, want 1", n, err)
		}
		if err := db.reader.QueryRow(`SELECT COUNT(*) FROM migrations`).Scan(&again); err != nil || again != applied {
			t.Fatalf("migrations recorded=%d err=%v, want %d", again, err, applied)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWrite_GroupCommit(t *testing.T) {
	db := MustOpen(t, Options{})
	ctx := context.Background()
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- db.w.write(ctx, func(tx *sql.Tx) error {
				_, err := tx.Exec(`INSERT INTO events (source, event_id, received_at, body, body_size) VALUES ('s', ?, 0, x'', 0)`, fmt.Sprint(i))
				return err
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var rows int
	if err := db.reader.QueryRow(`SELECT COUNT(*) FROM events`).Scan(&rows); err != nil || rows != n {
		t.Fatalf("rows=%d err=%v, want %d", rows, err, n)
	}
	st := db.Stats()
	if st.Writes != n {
		t.Fatalf("Stats().Writes=%d, want %d", st.Writes, n)
	}
	if st.Commits >= n {
		t.Fatalf("Stats().Commits=%d for %d concurrent writes, want fewer (group commit)", st.Commits, n)
	}
}

// batchRound submits writes concurrently and reports, for each, its error
// and the commit count it saw while running (equal for writes of one batch).
func batchRound(db *DB, fns []func(*sql.Tx) error) (errs []error, batch []int64) {
	errs = make([]error, len(fns))
	batch = make([]int64, len(fns))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = db.w.write(context.Background(), func(tx *sql.Tx) error {
				st := db.Stats() // batches so far, committed or not: this one's number
				batch[i] = st.Commits + st.FailedCommit
				return fn(tx)
			})
		}()
	}
	close(start)
	wg.Wait()
	return errs, batch
}

func TestWrite_FailureIsolatedInBatch(t *testing.T) {
	db := MustOpen(t, Options{})
	boom := errors.New("boom")
	for round := 0; ; round++ {
		if round == 50 {
			t.Fatal("no batch held both a failing and a succeeding write in 50 rounds")
		}
		const n = 40
		fns := make([]func(*sql.Tx) error, n)
		for i := range fns {
			id := fmt.Sprintf("r%d-%d", round, i)
			fns[i] = func(tx *sql.Tx) error {
				if _, err := tx.Exec(`INSERT INTO events (source, event_id, received_at, body, body_size) VALUES ('s', ?, 0, x'', 0)`, id); err != nil {
					return err
				}
				if i%3 == 0 {
					return boom // after its insert: the savepoint must undo it
				}
				return nil
			}
		}
		errs, batch := batchRound(db, fns)
		mixed := map[int64][2]int{}
		for i, err := range errs {
			id := fmt.Sprintf("r%d-%d", round, i)
			var stored int
			if err := db.reader.QueryRow(`SELECT COUNT(*) FROM events WHERE event_id = ?`, id).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			m := mixed[batch[i]]
			if i%3 == 0 {
				if !errors.Is(err, boom) || stored != 0 {
					t.Fatalf("failing write %s: err=%v stored=%d, want boom and nothing stored", id, err, stored)
				}
				m[0]++
			} else {
				if err != nil || stored != 1 {
					t.Fatalf("write %s: err=%v stored=%d, want committed", id, err, stored)
				}
				m[1]++
			}
			mixed[batch[i]] = m
		}
		for _, m := range mixed {
			if m[0] > 0 && m[1] > 0 {
				return // shown: one failure in a batch left its neighbours committed
			}
		}
	}
}

func TestWrite_CommitFailure(t *testing.T) {
	db := MustOpen(t, Options{})
	ctx := context.Background()
	// A deferred foreign key is checked only at COMMIT: the write's own
	// statements succeed and the commit fails.
	err := db.w.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`CREATE TABLE parent (id INTEGER PRIMARY KEY) STRICT;
			CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER NOT NULL REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED) STRICT`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	orphan := func(id int) func(*sql.Tx) error {
		return func(tx *sql.Tx) error {
			_, err := tx.Exec(`INSERT INTO child (id, parent) VALUES (?, 999)`, id)
			return err
		}
	}
	count := func(table string) int {
		var n int
		if err := db.reader.QueryRow(`SELECT COUNT(*) FROM ` + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("Alone", func(t *testing.T) {
		err := db.w.write(ctx, orphan(1))
		var ce *CommitError
		if !errors.As(err, &ce) {
			t.Fatalf("err=%v, want a *CommitError", err)
		}
		if n := count("child"); n != 0 {
			t.Fatalf("child rows=%d after a failed commit, want 0", n)
		}
	})
	t.Run("Writer recovers", func(t *testing.T) {
		err := db.w.write(ctx, func(tx *sql.Tx) error {
			_, err := tx.Exec(`INSERT INTO parent (id) VALUES (1)`)
			return err
		})
		if err != nil {
			t.Fatalf("write after a failed commit: %v", err)
		}
		if n := count("parent"); n != 1 {
			t.Fatalf("parent rows=%d, want 1", n)
		}
	})
	t.Run("Whole batch", func(t *testing.T) {
		for round := 0; ; round++ {
			if round == 50 {
				t.Fatal("the failing write never shared a batch in 50 rounds")
			}
			fns := []func(*sql.Tx) error{orphan(2)}
			for i := range 20 {
				fns = append(fns, func(tx *sql.Tx) error {
					_, err := tx.Exec(`INSERT INTO parent (id) VALUES (?)`, 1000*(round+1)+i)
					return err
				})
			}
			before := count("parent")
			errs, batch := batchRound(db, fns)
			// Every write of the failed batch must see an error, and none of
			// it may be stored; writes of other batches commit.
			failed := 0
			for i, err := range errs {
				if batch[i] == batch[0] {
					if err == nil {
						t.Fatalf("write %d shared the failing commit but reported success", i)
					}
					failed++
				} else if err != nil {
					t.Fatalf("write %d in another batch: %v", i, err)
				}
			}
			if got, want := count("parent"), before+len(fns)-failed; got != want {
				t.Fatalf("parent rows=%d, want %d", got, want)
			}
			if n := count("child"); n != 0 {
				t.Fatalf("child rows=%d, want 0", n)
			}
			if failed > 1 {
				return
			}
		}
	})
	t.Run("Closed", func(t *testing.T) {
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		ran := false
		err := db.w.write(ctx, func(tx *sql.Tx) error { ran = true; return nil })
		if !errors.Is(err, ErrClosed) || ran {
			t.Fatalf("write after Close: err=%v ran=%v, want ErrClosed and not run", err, ran)
		}
	})
}

// Every foreign key's column leads some index: deleting a parent row (the
// retention sweep deleting events) looks up its children through that
// column, and without an index each deletion scans the child table inside
// the writer, holding every ack.
func TestSchema_ForeignKeysAreIndexed(t *testing.T) {
	db := MustOpen(t, Options{})
	r := db.reader
	rows, err := r.Query(`SELECT m.name, f."from" FROM sqlite_schema m, pragma_foreign_key_list(m.name) f WHERE m.type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	type fk struct{ table, column string }
	var fks []fk
	for rows.Next() {
		var k fk
		if err := rows.Scan(&k.table, &k.column); err != nil {
			t.Fatal(err)
		}
		fks = append(fks, k)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if len(fks) < 4 {
		t.Fatalf("found %d foreign keys, want the schema's (deliveries, attempts, dead_letters ×2)", len(fks))
	}
	for _, k := range fks {
		var n int
		err := r.QueryRow(`SELECT count(*) FROM pragma_index_list(?) l, pragma_index_info(l.name) i
			WHERE i.seqno = 0 AND i.name = ? AND l.partial = 0`, k.table, k.column).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Errorf("%s.%s references another table but leads no index: deleting a parent scans %s", k.table, k.column, k.table)
		}
	}
}

// NoMigrate (the read commands) refuses a store that lacks some of this
// build's migrations instead of applying them: a serve of the older build
// may be running on it, and its statements need the schema it knows.
func TestOpen_NoMigrateLeavesAnOlderStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookbox.db")
	db, err := Open(path, Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	// As an older build left it: without the last migration.
	if err := db.w.write(context.Background(), func(tx *sql.Tx) error {
		if _, err := tx.Exec(`DROP INDEX dead_letters_event`); err != nil {
			return err
		}
		_, err := tx.Exec(`DELETE FROM migrations WHERE name = 'migrations/0005_dead_letters_event_index.sql'`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	_, err = Open(path, Options{NoMigrate: true, Logger: zerolog.Nop()})
	if !errors.Is(err, ErrSchemaBehind) || !strings.Contains(err.Error(), "0005_dead_letters_event_index.sql") {
		t.Fatalf("NoMigrate open of an older store: %v, want ErrSchemaBehind naming the missing migration", err)
	}
	db, err = Open(path, Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatalf("open (migrating): %v", err)
	}
	defer db.Close()
	var n int
	if err := db.reader.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'dead_letters_event'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("after a migrating open: index present %d (err %v), want 1", n, err)
	}
}
