package postgres_test

import (
	"context"
	"testing"

	"github.com/rs/zerolog"

	"hookbox/internal/enginetest"
	"hookbox/postgres"
	"hookbox/postgres/pgtest"
	"hookbox/replica"
)

// freshSchema is a schema of its own for a test of the engine.
func freshSchema(t *testing.T) string {
	t.Helper()
	return pgtest.Schema(t, "hookbox_test_", "the PostgreSQL engine's tests")
}

func open(t *testing.T, u string, o postgres.Options) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), u, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// self is this test process as a serve replica, with a fresh id.
func self(t *testing.T) replica.Process {
	t.Helper()
	p, err := replica.Self()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// goneReplica is a replica of this machine whose process is gone: a pid
// that no process has (above the kernel's pid_max).
func goneReplica(t *testing.T) replica.Process {
	p := self(t)
	p.ID, p.PID = p.ID+"-gone", 1<<23
	return p
}

// engine is the store opened as one replica, able to open others.
type engine struct {
	*postgres.DB
	url string
}

func (e engine) Peer(t *testing.T, alive bool) enginetest.Engine {
	r := self(t)
	if !alive {
		r = goneReplica(t)
	}
	return open(t, e.url, postgres.Options{Replica: r, Logger: zerolog.Nop()})
}

// The PostgreSQL engine has every behaviour of a store engine.
func TestEngine(t *testing.T) {
	freshSchema(t) // skips here, once, without a test database
	enginetest.Run(t, func(t *testing.T) enginetest.Engine {
		u := freshSchema(t)
		return engine{open(t, u, postgres.Options{Replica: self(t), Logger: zerolog.Nop()}), u}
	})
}
