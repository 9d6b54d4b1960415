// Package store opens hookbox's SQLite database: one writer connection that
// group-commits every write, a pool of readers, embedded migrations, and the
// startup checks that make "committed" mean "on disk".
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	_ "modernc.org/sqlite" // registers the "sqlite" driver (pure Go, no cgo)
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// MinSQLiteVersion is the oldest SQLite hookbox runs on: 3.51.3 fixes a WAL
// reset bug that can corrupt a database written by concurrent connections.
const MinSQLiteVersion = "3.51.3"

// Errors returned by Write.
var (
	// ErrClosed means the store is shutting down and took no new write.
	ErrClosed = errors.New("store is closed")
)

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

// RealPath is path absolute, with symbolic links resolved as the kernel
// resolves them, also for a store not created yet: a link to a file not
// there yet names that file, and a missing file is named through its
// directory's real path. It is the store's identity: the serve lock and
// HOOKBOX_STORE use it, so a store named another way is still the same.
func RealPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	for range 40 { // as the kernel, give up on a loop of links
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			return real, nil
		}
		// The file is missing (or a link to a missing one): resolve its
		// directory, then follow the link, if it is one, from there.
		dir, base := filepath.Dir(abs), filepath.Base(abs)
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		target, err := os.Readlink(filepath.Join(dir, base))
		if err != nil {
			return filepath.Join(dir, base), nil
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		abs = target
	}
	return abs, nil
}

// DueCondition is the deliveries_due index's partial condition (migrations
// 0001 and 0002), word for word: a query naming the index with INDEXED BY
// must repeat it, or SQLite fails it with "no query solution". The index
// holds the queued deliveries: pending, retrying and running.
const DueCondition = `(status = 'pending' OR status = 'retrying' OR status = 'running')`

// ErrSchemaBehind means the store lacks migrations of this build and
// Options.NoMigrate kept Open from applying them.
var ErrSchemaBehind = errors.New("the store was last opened for writing by an older hookbox; start this version's hookbox serve on it once to update it")

// DB is an open hookbox database.
type DB struct {
	path   string
	opts   Options
	writer *sql.DB
	reader *sql.DB
	log    zerolog.Logger

	ops       chan *op
	mu        sync.RWMutex // guards closed against sends on ops
	closed    bool
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error

	statsMu sync.Mutex
	stats   Stats

	prepared sync.Map // query → *sql.Stmt prepared on the writer pool, nil while preparing
}

// Stats counts group commits, for metrics and benchmarks.
type Stats struct {
	Commits      int64 // transactions committed
	Writes       int64 // writes batched into them
	FailedCommit int64 // transactions that failed: none of their writes happened
}

type op struct {
	ctx  context.Context
	fn   func(*sql.Tx) error
	err  error
	done chan struct{} // closed after the commit, for Write
	cb   func(error)   // called after the commit, for WriteAsync
}

// DefaultJournalSizeLimit is the WAL size a store keeps after a checkpoint
// unless Options says otherwise; checkpoints start at half of it at most.
const DefaultJournalSizeLimit = 64 << 20

// Open opens (creating if needed) the database at path, applies migrations and
// checks that the pragmas took effect. It refuses to run on an SQLite older
// than MinSQLiteVersion, without WAL, or with a synchronous level other than
// the one asked for.
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

	db := &DB{path: path, opts: o, log: o.Logger, ops: make(chan *op, 4096), done: make(chan struct{})}
	var err error
	if db.writer, err = sql.Open("sqlite", dsn(path, o, false)); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	// One writer connection: SQLite has one writer anyway, and funnelling
	// every write through it means no SQLITE_BUSY inside the process.
	db.writer.SetMaxOpenConns(1)
	db.writer.SetMaxIdleConns(1)
	db.writer.SetConnMaxLifetime(0)
	db.writer.SetConnMaxIdleTime(0)

	if err := db.checkGates(syncLevel); err != nil {
		db.writer.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := migrate(context.Background(), db.writer, !o.NoMigrate); err != nil {
		db.writer.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if db.reader, err = sql.Open("sqlite", dsn(path, o, true)); err != nil {
		db.writer.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	db.reader.SetMaxOpenConns(o.Readers)
	db.reader.SetMaxIdleConns(o.Readers)

	go db.loop()
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
func (db *DB) checkGates(syncLevel int) error {
	ctx := context.Background()
	var version string
	if err := db.writer.QueryRowContext(ctx, `SELECT sqlite_version()`).Scan(&version); err != nil {
		// The first read of the file: "file is not a database", "unable
		// to open database file", "database or disk is full".
		return fmt.Errorf("%w (store.path must name a hookbox store, or a new file, that this user can read and write, on a disk with room)", err)
	}
	if versionLess(version, MinSQLiteVersion) {
		return fmt.Errorf("sqlite %s is older than %s (WAL-reset bug): rebuild hookbox with a newer modernc.org/sqlite", version, MinSQLiteVersion)
	}
	var mode string
	if err := db.writer.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return fmt.Errorf("read journal_mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal_mode is %q, not wal: the file system may not support WAL (network file systems do not); put the store on a local disk", mode)
	}
	var busy int
	if err := db.writer.QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil {
		return fmt.Errorf("read busy_timeout: %w", err)
	}
	if busy <= 0 {
		return errors.New("busy_timeout is 0: readers would fail at once while serve writes")
	}
	var sync int
	if err := db.writer.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&sync); err != nil {
		return fmt.Errorf("read synchronous: %w", err)
	}
	if sync != syncLevel {
		return fmt.Errorf("synchronous is %d, want %d (%s)", sync, syncLevel, db.opts.Synchronous)
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

// migrate applies each embedded migration not yet recorded, each in its own
// transaction; without apply, it returns ErrSchemaBehind instead, naming them.
func migrate(ctx context.Context, db *sql.DB, apply bool) error {
	if apply {
		if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT`); err != nil {
			return fmt.Errorf("create migrations table: %w", err)
		}
	}
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	// Which are applied is read without the write lock: the read commands
	// open the store while serve writes, and an up-to-date store must not
	// make them wait for a busy writer (migrateFile checks again under it).
	applied := map[string]bool{}
	rows, err := db.QueryContext(ctx, `SELECT name FROM migrations`)
	if err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return fmt.Errorf("read migrations: %w", err)
		}
		applied[name] = true
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	var missing []string
	for _, name := range names {
		if !applied[name] {
			missing = append(missing, strings.TrimPrefix(name, "migrations/"))
		}
	}
	if !apply && len(missing) > 0 {
		return fmt.Errorf("%w (missing %s)", ErrSchemaBehind, strings.Join(missing, ", "))
	}
	for _, name := range names {
		if applied[name] {
			continue
		}
		if err := migrateFile(ctx, db, name); err != nil {
			return fmt.Errorf("migration %s: %w", name, err)
		}
	}
	return nil
}

func migrateFile(ctx context.Context, db *sql.DB, name string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM migrations WHERE name = ?`, name).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	buf, err := fs.ReadFile(migrationFS, name)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, string(buf)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO migrations (name, applied_at) VALUES (?, ?)`, name, time.Now().UnixMilli()); err != nil {
		return err
	}
	return tx.Commit()
}

// Path is the database file's path.
func (db *DB) Path() string { return db.path }

// Reader is the read-only connection pool. Reads there never block the writer.
func (db *DB) Reader() *sql.DB { return db.reader }

// Stats returns commit counters.
func (db *DB) Stats() Stats {
	db.statsMu.Lock()
	defer db.statsMu.Unlock()
	return db.stats
}

// Write runs fn inside a transaction shared with other concurrent writes
// (group commit) and returns once that transaction is durably committed.
// fn runs under its own savepoint: if it returns an error, only its changes
// are rolled back and that error is returned. If the commit itself fails,
// every write of the batch gets the commit error and none of them happened.
// fn runs on the writer goroutine: it must not call Write. fn may run more
// than once: when another write of its batch fails, the batch is rolled
// back and every other fn runs again under its own savepoint. So fn must
// only change the database and set its results, nothing outside.
//
// ctx decides only whether the write runs: one whose ctx has ended before
// the writer reaches it is skipped and gets ctx's error. fn's statements
// should use a context without cancellation (context.WithoutCancel): a
// statement its context interrupts rolls back the whole transaction, and
// with it the other writes of the batch.
//
// Write returns ErrClosed once Close has begun.
func (db *DB) Write(ctx context.Context, fn func(*sql.Tx) error) error {
	o := &op{ctx: ctx, fn: fn, done: make(chan struct{})}
	if err := db.enqueue(o); err != nil {
		return err
	}
	// The write cannot be abandoned once queued: the caller must learn
	// whether it committed, so wait for the writer rather than ctx.
	<-o.done
	return o.err
}

// WriteAsync is Write without waiting: fn joins the next group commit and
// done is called with the outcome once it is durable (or failed). done runs
// on the writer goroutine: it must be quick and must not call Write. It
// returns ErrClosed, without calling done, once Close has begun.
func (db *DB) WriteAsync(ctx context.Context, fn func(*sql.Tx) error, done func(error)) error {
	return db.enqueue(&op{ctx: ctx, fn: fn, cb: done})
}

// enqueue hands o to the writer, or returns ErrClosed once Close has begun
// (Close takes the lock to close the queue).
func (db *DB) enqueue(o *op) error {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return ErrClosed
	}
	db.ops <- o
	return nil
}

func (db *DB) loop() {
	defer close(db.done)
	batch := make([]*op, 0, db.opts.MaxBatch)
	for {
		o, ok := <-db.ops
		if !ok {
			return
		}
		batch = append(batch[:0], o)
		batch = db.gather(batch)
		db.commit(batch)
		for i := range batch {
			batch[i] = nil
		}
	}
}

// gather adds whatever else is waiting to the batch. With few cores the
// goroutines that are about to submit may not have run yet, so yield once
// before deciding the batch is complete.
func (db *DB) gather(batch []*op) []*op {
	for yielded := false; len(batch) < db.opts.MaxBatch; {
		select {
		case o, ok := <-db.ops:
			if !ok {
				return batch
			}
			batch = append(batch, o)
		default:
			if yielded {
				return batch
			}
			yielded = true
			runtime.Gosched()
		}
	}
	return batch
}

func (db *DB) commit(batch []*op) {
	err := db.runBatch(batch)
	db.statsMu.Lock()
	if err != nil {
		db.stats.FailedCommit++
	} else {
		db.stats.Commits++
		db.stats.Writes += int64(len(batch))
	}
	db.statsMu.Unlock()
	if err != nil {
		db.log.Error().Err(err).Int("writes", len(batch)).Msg("commit failed")
	}
	for _, o := range batch {
		if err != nil && o.err == nil {
			o.err = err
		}
		if o.cb != nil {
			o.cb(o.err)
		} else {
			close(o.done)
		}
	}
}

// CommitError wraps a failure of the shared transaction (begin, savepoint
// bookkeeping or commit): nothing of the batch was written.
type CommitError struct{ Err error }

func (e *CommitError) Error() string { return "commit: " + e.Err.Error() }
func (e *CommitError) Unwrap() error { return e.Err }

// runBatch commits the batch. Writes rarely fail, so the batch first runs
// without savepoints (two statements fewer per write); if one write fails,
// that transaction is rolled back and the batch runs again with a savepoint
// around each write, so that only the failing one is undone.
func (db *DB) runBatch(batch []*op) error {
	failed, err := db.tryBatch(batch, false)
	if err != nil || !failed || len(batch) == 1 {
		return err
	}
	for _, o := range batch {
		o.err = nil
	}
	_, err = db.tryBatch(batch, true)
	return err
}

// tryBatch runs every write of batch in one transaction and commits it.
// Without isolate, the first failing write stops the batch, nothing is
// committed, and failed is true.
func (db *DB) tryBatch(batch []*op, isolate bool) (failed bool, err error) {
	ctx := context.Background()
	tx, err := db.writer.BeginTx(ctx, nil)
	if err != nil {
		return false, &CommitError{fmt.Errorf("begin: %w", err)}
	}
	defer tx.Rollback()
	for _, o := range batch {
		if err := o.ctx.Err(); err != nil {
			o.err = err
			continue
		}
		if !isolate {
			if err := o.fn(tx); err != nil {
				o.err = err
				return true, nil
			}
			continue
		}
		if _, err := tx.ExecContext(ctx, `SAVEPOINT w`); err != nil {
			return false, &CommitError{fmt.Errorf("savepoint: %w", err)}
		}
		if err := o.fn(tx); err != nil {
			o.err = err
			// SQLite may have rolled back the whole transaction (disk full,
			// I/O error); then the savepoint is gone and so is the batch.
			if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO w`); rerr != nil {
				return false, &CommitError{fmt.Errorf("rollback to savepoint after %v: %w", err, rerr)}
			}
		}
		if _, err := tx.ExecContext(ctx, `RELEASE w`); err != nil {
			return false, &CommitError{fmt.Errorf("release savepoint: %w", err)}
		}
	}
	if err := tx.Commit(); err != nil {
		return false, &CommitError{err}
	}
	return false, nil
}

// Stmt returns query prepared for tx. SQLite parses and plans a statement
// text anew on every plain Exec, a large share of a small write's cost, so
// a query is prepared once on the writer connection and reused by every
// later transaction. The statement is closed with the transaction; callers
// do not close it.
func (db *DB) Stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if v, loaded := db.prepared.LoadOrStore(query, (*sql.Stmt)(nil)); loaded {
		if st := v.(*sql.Stmt); st != nil {
			return tx.StmtContext(ctx, st), nil
		}
	} else {
		// Prepare it once for the writer connection, from another
		// goroutine: the connection is busy with tx until this batch
		// commits, and the preparation takes it between two batches.
		go func() {
			st, err := db.writer.PrepareContext(context.Background(), query)
			if err != nil {
				db.prepared.Delete(query)
				return
			}
			db.prepared.Store(query, st)
		}()
	}
	// Until then (the first batch or so), prepare it in tx.
	return tx.PrepareContext(ctx, query)
}

// Close stops taking writes, commits the ones already queued, and closes both
// connection pools. It returns the first error.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.mu.Lock()
		db.closed = true
		close(db.ops)
		db.mu.Unlock()
		<-db.done
		db.prepared.Range(func(_, v any) bool {
			if st := v.(*sql.Stmt); st != nil {
				st.Close()
			}
			return true
		})
		if db.reader != nil {
			if err := db.reader.Close(); err != nil && db.closeErr == nil {
				db.closeErr = err
			}
		}
		// Checkpoint what can be without waiting: the read commands close
		// their store while serve may be writing, and must neither wait for
		// nor hold up its writer. Closing the last connection to the file
		// then checkpoints the rest and removes the WAL. A failure (a full
		// disk: the main file cannot grow) loses nothing: the WAL stays,
		// holding every commit, and the next open reads it.
		if _, err := db.writer.Exec(`PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
			db.log.Warn().Err(err).Msg("checkpoint at close failed; the WAL is kept and read at the next open")
		}
		if err := db.writer.Close(); err != nil && db.closeErr == nil {
			db.closeErr = err
		}
	})
	return db.closeErr
}
