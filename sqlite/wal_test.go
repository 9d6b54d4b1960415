package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// walSize is the size of the store's -wal file (0 if there is none).
func walSize(tb testing.TB, path string) int64 {
	tb.Helper()
	fi, err := os.Stat(path + "-wal")
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}

// TestWAL_BoundedAfterLongReader holds a read snapshot open on a separate
// connection (as a long `hookbox events` or a backup would) while writes go
// on: checkpoints cannot pass the reader, so the WAL grows. Once the reader
// ends and writes continue, the WAL must shrink back to at most
// JournalSizeLimit and stay there.
func TestWAL_BoundedAfterLongReader(t *testing.T) {
	const limit = 1 << 20
	path := filepath.Join(t.TempDir(), "hookbox.db")
	db, err := Open(path, Options{JournalSizeLimit: limit, Synchronous: "normal", Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if err := db.w.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`CREATE TABLE blobs (id INTEGER PRIMARY KEY, b BLOB NOT NULL) STRICT`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	blob := bytes.Repeat([]byte{0x5A}, 32<<10)
	// write adds n rows of 32 KiB in one commit and deletes older rows, so
	// the database stays small and only the WAL can grow.
	next := 0
	write := func(n int) {
		t.Helper()
		err := db.w.write(ctx, func(tx *sql.Tx) error {
			for range n {
				next++
				if _, err := tx.Exec(`INSERT INTO blobs (id, b) VALUES (?, ?)`, next, blob); err != nil {
					return err
				}
			}
			_, err := tx.Exec(`DELETE FROM blobs WHERE id <= ?`, next-64)
			return err
		})
		if err != nil {
			t.Fatalf("write: %v", err)
		}
	}

	// A long reader: its own connection, a read transaction that has read
	// something, so it pins a snapshot.
	rdb, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	rtx, err := rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := rtx.QueryRow(`SELECT COUNT(*) FROM blobs`).Scan(&n); err != nil {
		t.Fatal(err)
	}

	for range 40 {
		write(8) // 40 × 8 × 32 KiB = 10 MiB
	}
	grown := walSize(t, path)
	if grown <= 4*limit {
		t.Fatalf("WAL=%d bytes with a reader pinning a snapshot, want it to grow past %d", grown, 4*limit)
	}
	if err := rtx.Rollback(); err != nil {
		t.Fatal(err)
	}

	// With the reader gone, the next writes checkpoint and restart the WAL.
	var after int64
	for i := range 40 {
		write(1)
		after = walSize(t, path)
		if i >= 4 && after <= limit {
			break
		}
	}
	if after > limit {
		t.Fatalf("WAL=%d bytes after the reader ended and 40 more commits, want <= journal_size_limit %d (was %d)", after, limit, grown)
	}
	// And it stays bounded under sustained writes.
	var peak int64
	for range 100 {
		write(2)
		peak = max(peak, walSize(t, path))
	}
	if peak > limit {
		t.Fatalf("WAL peaked at %d bytes under sustained writes, want <= %d", peak, limit)
	}
	t.Logf("WAL: %d bytes with the long reader, %d after it ended, peak %d under 200 more commits (limit %d)", grown, after, peak, limit)
}

// The startup gates refuse a store where WAL did not take effect or where
// busy_timeout ended up 0; TestOpen_Gates covers synchronous.
func TestOpen_GatesRefuse(t *testing.T) {
	t.Run("No WAL", func(t *testing.T) {
		// An in-memory database cannot be in WAL mode: journal_mode stays
		// "memory", as it stays "delete" on a file system without WAL support.
		db, err := Open(":memory:", Options{Logger: zerolog.Nop()})
		if err == nil {
			db.Close()
			t.Fatal("open without WAL succeeded, want an error")
		}
		if !strings.Contains(err.Error(), "not wal") {
			t.Fatalf("err=%q, want it to say journal_mode is not wal", err)
		}
	})
	t.Run("Busy timeout rounds to 0", func(t *testing.T) {
		db, err := Open(filepath.Join(t.TempDir(), "hookbox.db"), Options{BusyTimeout: time.Microsecond, Logger: zerolog.Nop()})
		if err == nil {
			db.Close()
			t.Fatal("open with busy_timeout 0 succeeded, want an error")
		}
		if !strings.Contains(err.Error(), "busy_timeout is 0") {
			t.Fatalf("err=%q, want it to name busy_timeout", err)
		}
	})
}

// The read commands (hookbox events, event, dead) open the store while
// serve writes without pause. Opening an up-to-date store must not need the
// write lock, or a busy serve starves them into "database is locked".
func TestOpen_WhileAnotherProcessWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookbox.db")
	first, err := Open(path, Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { first.Close() })

	// Another connection holds the write lock for the whole open.
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), `ROLLBACK`)

	start := time.Now()
	db, err := Open(path, Options{BusyTimeout: 300 * time.Millisecond, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatalf("open while another connection holds the write lock: %v, want success (nothing to migrate)", err)
	}
	var n int
	if err := db.reader.QueryRow(`SELECT COUNT(*) FROM migrations`).Scan(&n); err != nil || n == 0 {
		t.Fatalf("migrations rows=%d err=%v, want the applied migrations readable", n, err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if took := time.Since(start); took > 250*time.Millisecond {
		t.Fatalf("open and close took %v: they waited on the write lock", took)
	}
}

// A clean close of the only connection leaves no WAL behind.
func TestClose_CheckpointsWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookbox.db")
	db, err := Open(path, Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.w.write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`CREATE TABLE t (b BLOB) STRICT; INSERT INTO t VALUES (zeroblob(100000))`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if walSize(t, path) == 0 {
		t.Fatal("no WAL after a write")
	}
	if err := db.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if n := walSize(t, path); n != 0 {
		t.Fatalf("WAL=%d bytes after a clean close, want none", n)
	}
}
