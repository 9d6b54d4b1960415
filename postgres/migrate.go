package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The migrations, applied in the order of their numbers, each once, each
// in its own transaction, and recorded in hookbox_migrations.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// ErrSchemaBehind means the store lacks migrations of this build and
// Options.NoMigrate kept Open from applying them.
var ErrSchemaBehind = errors.New("the store was last migrated by an older hookbox; start this version's hookbox serve on it once to update it")

// noStoreError is a database hookbox never migrated: no store yet. It is
// ErrSchemaBehind to errors.Is (serve creates it, as it updates an old
// one), with its own words.
type noStoreError struct{}

func (*noStoreError) Error() string {
	return "no hookbox store in this database yet (start hookbox serve with this config once to create it)"
}

func (*noStoreError) Is(target error) bool { return target == ErrSchemaBehind }

// ErrSchemaAhead means the store holds migrations this build does not
// know: a newer hookbox migrated it, and this one's statements may no
// longer fit its tables.
var ErrSchemaAhead = errors.New("the store was migrated by a newer hookbox: run that version (or a newer one), not this one")

// migrationLock is the transaction-level advisory lock key under which
// migrations run, so that replicas starting together migrate one at a time.
const migrationLock = 0x686f6f6b626f78 // "hookbox"

func migrate(ctx context.Context, pool *pgxpool.Pool, apply bool) error {
	if apply {
		// Under the lock: two servers creating the table at once would
		// otherwise collide in the catalog, IF NOT EXISTS or not.
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS hookbox_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`)
			return err
		})
		if err != nil {
			return fmt.Errorf("create migrations table: %w", err)
		}
	}
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	known := map[string]bool{}
	for _, n := range names {
		known[strings.TrimPrefix(n, "migrations/")] = true
	}
	applied := map[string]bool{}
	var list []string
	// Without the table (a database hookbox never migrated), none.
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('hookbox_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	if exists {
		rows, err := pool.Query(ctx, `SELECT name FROM hookbox_migrations`)
		if err != nil {
			return fmt.Errorf("read migrations: %w", err)
		}
		if list, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return fmt.Errorf("read migrations: %w", err)
		}
	}
	var ahead []string
	for _, name := range list {
		applied[name] = true
		if !known[name] {
			ahead = append(ahead, name)
		}
	}
	if len(ahead) > 0 {
		sort.Strings(ahead)
		return fmt.Errorf("%w (unknown to it: %s)", ErrSchemaAhead, strings.Join(ahead, ", "))
	}
	var missing []string
	for _, name := range names {
		if n := strings.TrimPrefix(name, "migrations/"); !applied[n] {
			missing = append(missing, n)
		}
	}
	if !apply && !exists {
		// Errors.Is ErrSchemaBehind still: the cure is the same.
		return fmt.Errorf("%w", &noStoreError{})
	}
	if !apply && len(missing) > 0 {
		return fmt.Errorf("%w (missing %s)", ErrSchemaBehind, strings.Join(missing, ", "))
	}
	for _, name := range missing {
		if err := migrateFile(ctx, pool, name); err != nil {
			return fmt.Errorf("migration %s: %w", name, err)
		}
	}
	return nil
}

func migrateFile(ctx context.Context, pool *pgxpool.Pool, name string) error {
	buf, err := fs.ReadFile(migrationFS, "migrations/"+name)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
			return err
		}
		var done bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM hookbox_migrations WHERE name = $1)`, name).Scan(&done); err != nil {
			return err
		}
		if done { // another replica applied it meanwhile
			return nil
		}
		// No parameters: the simple protocol runs the file's several
		// statements in this transaction.
		if _, err := tx.Exec(ctx, string(buf), pgx.QueryExecModeSimpleProtocol); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO hookbox_migrations (name) VALUES ($1)`, name)
		return err
	})
}
