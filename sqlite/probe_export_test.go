package sqlite

import "context"

func (db *DB) QueryRowForTest(ctx context.Context, q string, dst ...any) error {
	return db.reader.QueryRowContext(ctx, q).Scan(dst...)
}
