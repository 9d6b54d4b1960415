// Package postgres is hookbox's PostgreSQL engine: every statement hookbox
// runs on a PostgreSQL store, its migrations and the startup checks, on a
// pgx connection pool (river's riverpgxv5).
//
// It offers the domain methods of the SQLite engine (IngestEvent, Claim,
// Complete, Sweep, …) on the types of the packages that hold the logic
// (dedupe, queue), which declare the interfaces they need; no transaction,
// statement or SQL text leaves this package. Each write is a transaction
// of its own: PostgreSQL takes concurrent writers, so there is no group
// writer. One file per table or concern: db.go opens and checks,
// migrate.go migrates, events.go, deliveries.go, replay.go, attempts.go,
// dead_letters.go, alerts.go and stats.go hold the statements of what
// they name.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"hookbox/order"
	"hookbox/replica"
)

// MinServerVersion is the oldest PostgreSQL hookbox runs on (13: the
// oldest release its statements and the PostgreSQL project still support).
const MinServerVersion = 130000

// ErrClosed means the store is shutting down and took no new write.
var ErrClosed = errors.New("store is closed")

// Options tune how the database is opened.
type Options struct {
	// MaxConns bounds the pool (default: pgxpool's, or the URL's
	// pool_max_conns).
	MaxConns int32
	// NoMigrate opens the store as it is: a store missing some of this
	// build's migrations is refused (ErrSchemaBehind) rather than migrated.
	// The read commands use it.
	NoMigrate bool
	// Replica is the serve replica this store is opened for: its claims
	// record it, and Recover takes back what it and the gone replicas of
	// its machine left running (replicas.go). Zero for the read commands,
	// whose claims (none) and recoveries concern no replica.
	Replica replica.Process
	Logger  zerolog.Logger
}

// Stats counts committed and failed write transactions.
type Stats struct {
	Commits      int64
	Writes       int64
	FailedCommit int64
}

// DB is an open hookbox store on PostgreSQL.
type DB struct {
	pool *pgxpool.Pool
	log  zerolog.Logger

	mu     sync.RWMutex // guards closed against new writes
	closed bool
	async  sync.WaitGroup // CompleteAsync writes under way

	commits, failed atomic.Int64

	replica  replica.Process
	channel  string        // the notification channel of this schema
	kick     chan struct{} // Wake's requests to the notifier
	notified chan struct{} // closed once the notifier has ended
	order    order.Targets // SetOrder
}

// Open connects to the database at url (postgres://…), checks the
// server's version, and applies the migrations this build has and the
// database lacks. It refuses a server older than PostgreSQL 13, and a
// schema migrated by a newer hookbox; with Options.NoMigrate, one lacking
// some of this build's migrations (ErrSchemaBehind). Errors never hold the
// URL's password.
func Open(ctx context.Context, url string, o Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors hold the URL, password and all.
		return nil, errors.New("open store: the store URL does not parse: want postgres://user:password@host:port/database?sslmode=…")
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", Redact(url), err)
	}
	db := &DB{pool: pool, log: o.Logger, replica: o.Replica, kick: make(chan struct{}, 1), notified: make(chan struct{})}
	if err := db.checkServer(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", Redact(url), err)
	}
	if err := migrate(ctx, pool, !o.NoMigrate); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", Redact(url), err)
	}
	var schema *string
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %w", Redact(url), err)
	}
	if schema != nil {
		db.channel = channelName(*schema)
	} else {
		db.channel = channelName("")
	}
	if !o.NoMigrate {
		if err := db.register(ctx); err != nil {
			pool.Close()
			return nil, fmt.Errorf("open store %s: %w", Redact(url), err)
		}
	}
	go db.notifier()
	var sync string
	if err := pool.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&sync); err == nil && sync == "off" {
		db.log.Warn().Str("synchronous_commit", sync).
			Msg("synchronous_commit is off: a 200 is answered before the event is on disk, and a crash of the PostgreSQL server can lose the last accepted events; set it to on")
	}
	return db, nil
}

// checkServer refuses a server older than MinServerVersion.
func (db *DB) checkServer(ctx context.Context) error {
	var s string
	if err := db.pool.QueryRow(ctx, `SHOW server_version_num`).Scan(&s); err != nil {
		return fmt.Errorf("%w (store.url must name a PostgreSQL database this user can reach, create tables in and write)", err)
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("server_version_num %q: %w", s, err)
	}
	if n < MinServerVersion {
		return fmt.Errorf("PostgreSQL %d.%d is older than 13: upgrade the server (hookbox needs PostgreSQL 13 or newer)", n/10000, n%10000)
	}
	return nil
}

// Redact is url with its password, if any, replaced by "xxxxx": what
// errors and logs may show.
func Redact(url string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return "(unparsable store URL)"
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
}

// write runs fn in a transaction of its own and commits it. Once begun, a
// write is not abandoned when ctx ends: the caller must learn whether it
// committed. It returns ErrClosed once Close has begun.
func (db *DB) write(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return ErrClosed
	}
	return db.writeLocked(ctx, fn)
}

func (db *DB) writeLocked(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx = context.WithoutCancel(ctx)
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error { return fn(ctx, tx) })
	if err != nil {
		db.failed.Add(1)
		return err
	}
	db.commits.Add(1)
	return nil
}

// Stats returns the write counters: each write is its own transaction.
func (db *DB) Stats() Stats {
	c := db.commits.Load()
	return Stats{Commits: c, Writes: c, FailedCommit: db.failed.Load()}
}

// Exec runs query with args as one write and returns the rows it changed.
// hookbox itself never calls it: it serves tests and repairs by hand.
func (db *DB) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, query, args...)
		n = tag.RowsAffected()
		return err
	})
	return n, err
}

// Close stops taking writes, waits for the completions under way, and
// closes the pool.
func (db *DB) Close() error {
	db.mu.Lock()
	already := db.closed
	db.closed = true
	db.mu.Unlock()
	if already {
		return nil
	}
	db.async.Wait()
	close(db.kick)
	<-db.notified
	db.unregister()
	db.pool.Close()
	return nil
}

func (db *DB) isClosed() bool {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.closed
}

// ms is t in unix milliseconds, as the tables keep times.
func ms(t time.Time) int64 { return t.UnixMilli() }

// fromMS is the UTC time of unix milliseconds v.
func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

// fromNullMS is fromMS of v, or the zero time for NULL.
func fromNullMS(v *int64) time.Time {
	if v == nil {
		return time.Time{}
	}
	return fromMS(*v)
}

// ids is list as a bigint[] parameter: empty, never NULL, for none (a
// comparison with a NULL array is NULL and would select nothing).
func ids(list []int64) []int64 {
	if list == nil {
		return []int64{}
	}
	return list
}

// args builds a statement's numbered parameters.
type args []any

// add appends v and returns its placeholder.
func (a *args) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}
