package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Wake-ups between replicas go by LISTEN/NOTIFY on one channel per schema
// (hookbox's tables may share a database with another hookbox's, in
// another schema): "due" after a commit that queued work, "leader:NAME"
// when a replica gives a leader lease up. A notification is only a hint:
// one lost (the listening connection was down, the sender died between
// its commit and its NOTIFY) delays work until the pool's next look,
// never loses it.

const (
	dueTopic    = "due"
	leaderTopic = "leader:"
	// listenerName is the listening connection's application_name.
	listenerName = "hookbox listener"
)

// Listener is told what the other replicas (and this one) announce.
type Listener struct {
	Due    func()            // work may be due: a commit queued some
	Leader func(name string) // the lease name was given up
	// Up is told when the listening connection comes up (true) and when
	// it goes down (false): while it is down, nothing is announced.
	Up func(up bool)
}

// channelName is the notification channel of the tables in schema: an
// identifier of at most 63 bytes, as PostgreSQL keeps them.
func channelName(schema string) string {
	name := "hookbox"
	if schema != "" {
		name += "_" + schema
	}
	if len(name) > 63 {
		name = name[:63]
	}
	return name
}

// Wake tells every replica's pool, this one's too, that work may be due.
// It returns at once: the NOTIFY goes out after the caller's commit, one
// for all the Wake calls made while the previous one was being sent, so
// that under load the notifications stay few.
func (db *DB) Wake() {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.closed {
		return // Close closes kick
	}
	select {
	case db.kick <- struct{}{}:
	default:
	}
}

// WakeNow is Wake, waiting for the notification to be sent: for a command
// that exits right after (replay).
func (db *DB) WakeNow(ctx context.Context) error {
	if _, err := db.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, db.channel, dueTopic); err != nil {
		return fmt.Errorf("notify replicas: %w", err)
	}
	return nil
}

// notifier sends the NOTIFY that Wake asks for until kick is closed.
func (db *DB) notifier() {
	defer close(db.notified)
	for range db.kick {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := db.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, db.channel, dueTopic)
		cancel()
		if err != nil && !db.isClosed() {
			db.log.Debug().Err(err).Msg("could not notify the other replicas; they find the work at their next look")
		}
	}
}

// Listen listens for the replicas' announcements on a connection of its
// own, outside the pool, until ctx ends. When the connection fails it
// says so (Up(false)), connects again after a pause growing to 5 s, and,
// once up again, calls Due: what was announced meanwhile is lost.
func (db *DB) Listen(ctx context.Context, l Listener) {
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		up, err := db.listenOnce(ctx, l)
		if up {
			wait = 100 * time.Millisecond
			if l.Up != nil {
				l.Up(false)
			}
		}
		if ctx.Err() != nil {
			return
		}
		db.log.Warn().Err(err).Str("retry_in", wait.String()).
			Msg("notification connection down: other replicas' new work is found by polling until it is back")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// listenOnce connects, listens and hands on notifications until the
// connection fails or ctx ends; up says whether it got to listen.
func (db *DB) listenOnce(ctx context.Context, l Listener) (up bool, err error) {
	cfg := db.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = listenerName // for pg_stat_activity
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{db.channel}.Sanitize()); err != nil {
		return false, fmt.Errorf("listen: %w", err)
	}
	if l.Up != nil {
		l.Up(true)
	}
	if l.Due != nil {
		l.Due() // anything announced while nobody listened
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		switch {
		case n.Payload == dueTopic:
			if l.Due != nil {
				l.Due()
			}
		case strings.HasPrefix(n.Payload, leaderTopic):
			if l.Leader != nil {
				l.Leader(strings.TrimPrefix(n.Payload, leaderTopic))
			}
		}
	}
}
