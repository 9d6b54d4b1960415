//go:build unix

package sqlite

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rs/zerolog"
)

// A store hookbox creates is readable by its owner only, WAL and shared
// memory files included, whatever the umask: it holds every payload.
func TestOpen_NewStoreIsOwnerOnly(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "hookbox.db")
	db, err := Open(path, Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	writeAndCheckOwnerOnly(t, db, path, path+"-wal", path+"-shm")
}

// writeAndCheckOwnerOnly writes to db (so that the WAL exists) and checks
// that no file of files grants group or others any access.
func writeAndCheckOwnerOnly(t *testing.T, db *DB, files ...string) {
	t.Helper()
	if err := db.w.write(context.Background(), func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO events (source, event_id, received_at, body, body_size) VALUES ('s', 'e1', 0, x'00', 1)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, p := range files {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %v, want no access for group or others", filepath.Base(p), perm)
		}
	}
}

// Through a link to a file not created yet, the store is created where the
// link points, owner-only as any new store.
func TestOpen_NewStoreThroughALinkIsOwnerOnly(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	target := filepath.Join(dir, "real.db")
	link := filepath.Join(dir, "hookbox.db")
	if err := os.Symlink("real.db", link); err != nil {
		t.Fatal(err)
	}
	db, err := Open(link, Options{Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	writeAndCheckOwnerOnly(t, db, target, target+"-wal", target+"-shm")
}

// RealPath names a store the same before and after it is created, however
// its path goes through links: the kernel's way (a relative link target
// is read from the link's real directory).
func TestRealPath_SameBeforeAndAfterCreation(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	realDir := filepath.Join(base, "data", "hb")
	for _, d := range []string{realDir, filepath.Join(base, "data", "shared")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(realDir, filepath.Join(base, "srv")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../shared/hookbox.db", filepath.Join(realDir, "hookbox.db")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(base, "srv", "hookbox.db") // srv → data/hb; hookbox.db → ../shared/hookbox.db
	want := filepath.Join(base, "data", "shared", "hookbox.db")
	before, err := RealPath(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600) // created as the kernel follows the links
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	after, err := RealPath(path)
	if err != nil {
		t.Fatal(err)
	}
	if before != want || after != want {
		t.Errorf("RealPath before creation %q, after %q; want both %q", before, after, want)
	}
}

// ":memory:" is SQLite's, not a file name: no file of that name is made.
func TestOpen_MemoryMakesNoFile(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(":memory:", Options{Logger: zerolog.Nop()})
	if err == nil {
		db.Close()
	}
	if _, err := os.Stat(filepath.Join(wd, ":memory:")); err == nil {
		os.Remove(filepath.Join(wd, ":memory:"))
		t.Error(`opening ":memory:" left a file named ":memory:"`)
	}
}
