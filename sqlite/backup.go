package sqlite

import (
	"context"
	"fmt"
)

// BackupInto writes a consistent copy of the database to path with
// VACUUM INTO: one read transaction, so it runs beside a serve writing to
// the store and never holds up its writer. path must not exist, or be an
// empty file (which keeps its mode: create it owner-only first). The copy
// is a database of its own, compacted, without a WAL.
//
// It runs on the write connection (the read ones are query_only, which
// refuses VACUUM INTO) outside the writer goroutine, which it holds up
// meanwhile: it is for the backup command's own handle on the store, which
// writes nothing else. The store's file is only read.
func (db *DB) BackupInto(ctx context.Context, path string) error {
	if _, err := db.w.conn.ExecContext(ctx, `VACUUM INTO ?`, path); err != nil {
		return fmt.Errorf("backup into %s: %w", path, err)
	}
	return nil
}
