// Package sqlite is hookbox's SQLite engine: every statement hookbox runs
// on a SQLite store, its migrations, the one writer that group-commits
// every write, the startup checks that make "committed" mean "on disk", and
// the one-serve-per-store lock.
//
// It offers domain methods (IngestEvent, Claim, Complete, Sweep, …) on
// the types of the packages that hold the logic (dedupe, queue), which
// declare the interfaces they need; no transaction, statement or SQL text
// leaves this package. One file per table or concern: db.go opens and
// checks, writer.go commits, migrate.go migrates, lock.go locks, events.go,
// deliveries.go, replay.go, attempts.go, dead_letters.go, alerts.go and
// stats.go hold the statements of what they name.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hookbox/order"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	_ "modernc.org/sqlite" // registers the "sqlite" driver (pure Go, no cgo)
)

// MinSQLiteVersion is the oldest SQLite hookbox runs on: 3.51.3 fixes a WAL
// reset bug that can corrupt a database written by concurrent connections.
const MinSQLiteVersion = "3.51.3"

// Options tune how the database is opened.
type Options struct {
	// Synchronous is "full" (default), "normal" or "off". Only "full"
	// guarantees that a commit survives power loss in WAL mode.
	Synchronous string
	// BusyTimeout bounds how long a connection waits on another process's
	// lock (default 5s).
	BusyTimeout time.Duration
	// MaxBatch caps the number of writes committed together (default 512).
	MaxBatch int
	// JournalSizeLimit bounds the WAL file kept after a checkpoint (default 64 MiB).
	JournalSizeLimit int64
	// Readers is the size of the read pool (default 4).
	Readers int
	// NoMigrate opens the store as it is: a store missing some of this
	// build's migrations is refused (ErrSchemaBehind) rather than migrated.
	// The read commands use it: a serve of an older build may be running
	// on the store, and its statements need the schema it knows.
	NoMigrate bool
	Logger    zerolog.Logger
}

// DB is an open hookbox store: one writer connection that group-commits
// every write (writer.go) and a pool of read-only connections, which never
// block the writer.
type DB struct {
	path   string
	opts   Options
	w      *writer
	reader *sql.DB
	log    zerolog.Logger
	order  order.Targets // SetOrder
	done   lastDone      // health.go
}

// DefaultJournalSizeLimit is the WAL size a store keeps after a checkpoint
// unless Options says otherwise; checkpoints start at half of it at most.
const DefaultJournalSizeLimit = 64 << 20

// Open opens (creating if needed) the database at path, applies migrations and
// checks that the pragmas took effect. It refuses to run on an SQLite older
// than MinSQLiteVersion, without WAL, or with a synchronous level other than
// the one asked for; with Options.NoMigrate, on a store lacking some of this
// build's migrations (ErrSchemaBehind).
func Open(path string, o Options) (*DB, error) {
	if o.Synchronous == "" {
		o.Synchronous = "full"
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 512
	}
	if o.JournalSizeLimit <= 0 {
		o.JournalSizeLimit = DefaultJournalSizeLimit
	}
	if o.Readers <= 0 {
		o.Readers = 4
	}
	syncLevel, ok := map[string]int{"off": 0, "normal": 1, "full": 2}[o.Synchronous]
	if !ok {
		return nil, fmt.Errorf("open store: synchronous %q: want full, normal or off", o.Synchronous)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
	}
	// Created owner-only (SQLite would make it 0644 less the umask): it
	// holds every payload. SQLite gives the -wal and -shm files the
	// database file's mode. An empty file is an empty database. Created
	// where a link to a file not there yet points, as SQLite would.
	if path != ":memory:" && !strings.HasPrefix(path, "file:") {
		real, err := RealPath(path)
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		if f, err := os.OpenFile(real, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			f.Close()
		} else if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("open store: %w", err)
		}
	}

	db := &DB{path: path, opts: o, log: o.Logger}
	conn, err := sql.Open("sqlite", dsn(path, o, false))
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	// One writer connection: SQLite has one writer anyway, and funnelling
	// every write through it means no SQLITE_BUSY inside the process.
	conn.SetMaxOpenConns(1)
	conn.SetMaxIdleConns(1)
	conn.SetConnMaxLifetime(0)
	conn.SetConnMaxIdleTime(0)

	if err := checkGates(conn, syncLevel, o.Synchronous); err != nil {
		conn.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := migrate(context.Background(), conn, !o.NoMigrate); err != nil {
		conn.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if db.reader, err = sql.Open("sqlite", dsn(path, o, true)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	db.reader.SetMaxOpenConns(o.Readers)
	db.reader.SetMaxIdleConns(o.Readers)

	db.w = startWriter(conn, o.MaxBatch, o.Logger)
	return db, nil
}

func dsn(path string, o Options, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", o.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Add("_pragma", "journal_mode(wal)")
		q.Add("_pragma", "synchronous("+o.Synchronous+")")
		q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", o.JournalSizeLimit))
		q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", autocheckpointPages(o.JournalSizeLimit)))
		q.Set("_txlock", "immediate")
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// autocheckpointPages is the WAL size, in 4 KiB pages, at which a commit
// checkpoints: SQLite's default of 1000 pages, or half the journal size limit
// if that is smaller, so that in steady state the WAL never outgrows the
// limit (it is truncated back to the limit when it restarts after a
// checkpoint; a reader holding an old snapshot can still make it grow until
// the reader ends).
func autocheckpointPages(limit int64) int64 {
	return min(1000, max(1, limit/2/4096))
}

// checkGates verifies what the DSN asked for actually took effect.
func checkGates(conn *sql.DB, syncLevel int, synchronous string) error {
	ctx := context.Background()
	var version string
	if err := conn.QueryRowContext(ctx, `SELECT sqlite_version()`).Scan(&version); err != nil {
		// The first read of the file: "file is not a database", "unable
		// to open database file", "database or disk is full".
		return fmt.Errorf("%w (store.path must name a hookbox store, or a new file, that this user can read and write, on a disk with room)", err)
	}
	if versionLess(version, MinSQLiteVersion) {
		return fmt.Errorf("sqlite %s is older than %s (WAL-reset bug): rebuild hookbox with a newer modernc.org/sqlite", version, MinSQLiteVersion)
	}
	var mode string
	if err := conn.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return fmt.Errorf("read journal_mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal_mode is %q, not wal: the file system may not support WAL (network file systems do not); put the store on a local disk", mode)
	}
	var busy int
	if err := conn.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil {
		return fmt.Errorf("read busy_timeout: %w", err)
	}
	if busy <= 0 {
		return errors.New("busy_timeout is 0: readers would fail at once while serve writes")
	}
	var sync int
	if err := conn.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
		return fmt.Errorf("read synchronous: %w", err)
	}
	if sync != syncLevel {
		return fmt.Errorf("synchronous is %d, want %d (%s)", sync, syncLevel, synchronous)
	}
	return nil
}

// versionLess compares dotted decimal versions.
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// Path is the database file's path.
func (db *DB) Path() string { return db.path }

// Exec runs query (one statement with args, or several without) as one
// write of the group commit and returns the rows it changed. hookbox itself
// never calls it: it serves tests and repairs by hand, which need what no
// domain method does (a trigger refusing writes, a row as an older build
// or a crash left it).
func (db *DB) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	err := db.w.write(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(context.WithoutCancel(ctx), query, args...)
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	return n, err
}

// Close stops taking writes, commits the ones already queued, and closes both
// connection pools. It returns the first error.
func (db *DB) Close() error {
	return db.w.close(func() error {
		var first error
		if db.reader != nil {
			first = db.reader.Close()
		}
		// Checkpoint what can be without waiting: the read commands close
		// their store while serve may be writing, and must neither wait for
		// nor hold up its writer. Closing the last connection to the file
		// then checkpoints the rest and removes the WAL. A failure (a full
		// disk: the main file cannot grow) loses nothing: the WAL stays,
		// holding every commit, and the next open reads it.
		if _, err := db.w.conn.Exec(`PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
			db.log.Warn().Err(err).Msg("checkpoint at close failed; the WAL is kept and read at the next open")
		}
		return first
	})
}
