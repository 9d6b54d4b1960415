package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The leaders table holds the leases of the work that must run on one
// replica at a time (leader.Elector). Expiry is kept on the database's
// clock, so that replicas whose clocks disagree still agree on who holds
// a lease; a holder counts its own lease from before it asked, on its own
// clock, and so gives it up before the database lets another take it.

// dbNow is the database's clock in unix milliseconds, as the tables keep
// times.
const dbNow = `(extract(epoch from clock_timestamp()) * 1000)::bigint`

// leadSQL takes the lease $1 for holder $2 until $3 ms from now: a new
// lease, a renewal of the holder's own, or one whose expiry has passed.
// Another holder's live lease is left alone, and then no row comes back.
const leadSQL = `INSERT INTO leaders AS l (name, holder, elected_at, expires_at)
	VALUES ($1, $2, ` + dbNow + `, ` + dbNow + ` + $3)
	ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at,
		elected_at = CASE WHEN l.holder = excluded.holder THEN l.elected_at ELSE excluded.elected_at END
	WHERE l.holder = excluded.holder OR l.expires_at < excluded.elected_at
	RETURNING holder`

// Lead takes or renews the lease name for holder, to last ttl, and reports
// whether holder holds it now. false means another holder's lease is live.
func (db *DB) Lead(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	var got string
	err := db.pool.QueryRow(ctx, leadSQL, name, holder, ttl.Milliseconds()).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lead %s: %w", name, err)
	}
	return got == holder, nil
}

// Resign gives up holder's lease name, if it holds it, and wakes the other
// replicas so that one takes it over at once.
func (db *DB) Resign(ctx context.Context, name, holder string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM leaders WHERE name = $1 AND holder = $2`, name, holder)
	if err != nil {
		return fmt.Errorf("resign %s: %w", name, err)
	}
	if tag.RowsAffected() > 0 {
		if _, err := db.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, db.channel, leaderTopic+name); err != nil {
			return fmt.Errorf("resign %s: notify: %w", name, err)
		}
	}
	return nil
}

// Holder returns who holds the lease name and until when (the database's
// clock), or "" if nobody does.
func (db *DB) Holder(ctx context.Context, name string) (holder string, expires time.Time, err error) {
	var at int64
	err = db.pool.QueryRow(ctx, `SELECT holder, expires_at FROM leaders WHERE name = $1 AND expires_at >= `+dbNow, name).Scan(&holder, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("leader of %s: %w", name, err)
	}
	return holder, fromMS(at), nil
}
