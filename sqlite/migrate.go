package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"
)

// The migrations, applied in the order of their numbers, each once. Their
// names, as recorded in the migrations table, keep the "migrations/" of
// this path: a store names what it has applied that way.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// ErrSchemaBehind means the store lacks migrations of this build and
// Options.NoMigrate kept Open from applying them.
var ErrSchemaBehind = errors.New("the store was last opened for writing by an older hookbox; start this version's hookbox serve on it once to update it")

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
