package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/dedupe"
	"hookbox/postgres"
	"hookbox/queue"
)

// Migrations are recorded once; a schema a newer hookbox migrated is
// refused, as is, for the read commands, one this build has not migrated.
func TestMigrations(t *testing.T) {
	u := freshSchema(t)
	ctx := context.Background()
	if _, err := postgres.Open(ctx, u, postgres.Options{NoMigrate: true}); !errors.Is(err, postgres.ErrSchemaBehind) ||
		!strings.Contains(err.Error(), "no hookbox store in this database yet") {
		t.Fatalf("open an empty schema without migrating: %v, want ErrSchemaBehind saying there is no store yet", err)
	}
	db := open(t, u, postgres.Options{})
	db.Close()
	db = open(t, u, postgres.Options{NoMigrate: true}) // up to date: opens
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migration files: %v %v", files, err)
	}
	if _, err := db.Exec(ctx, fmt.Sprintf(`DO $$ BEGIN IF (SELECT count(*) FROM hookbox_migrations) <> %d THEN RAISE 'want each migration recorded once'; END IF; END $$`, len(files))); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO hookbox_migrations (name) VALUES ('9999_future.sql')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = postgres.Open(ctx, u, postgres.Options{})
	if !errors.Is(err, postgres.ErrSchemaAhead) || !strings.Contains(err.Error(), "9999_future.sql") {
		t.Fatalf("open a schema from a newer build: %v, want ErrSchemaAhead naming 9999_future.sql", err)
	}
}

// An error opening the store never shows the URL's password.
func TestOpenHidesPassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, u := range []string{
		"postgres://hookbox:s3cr3tpw@127.0.0.1:1/hookbox?sslmode=disable&connect_timeout=2",
		"postgres://hookbox:s3cr3tpw@127.0.0.1:5432/hookbox?sslmode=bogus",
	} {
		_, err := postgres.Open(ctx, u, postgres.Options{})
		if err == nil {
			t.Fatalf("open %s: no error", u)
		}
		if strings.Contains(err.Error(), "s3cr3tpw") {
			t.Errorf("open error shows the password: %v", err)
		}
	}
	if got := postgres.Redact("postgres://u:pw@db.example:6543/inbox?sslmode=require"); strings.Contains(got, "pw") || !strings.Contains(got, "db.example:6543/inbox") {
		t.Errorf("Redact = %q", got)
	}
}

// Claims from two pools on one database (two serve processes) never take
// the same delivery: SKIP LOCKED passes over what the other holds.
func TestConcurrentClaimsShareNothing(t *testing.T) {
	u := freshSchema(t)
	ctx := context.Background()
	a := open(t, u, postgres.Options{Logger: zerolog.Nop()})
	b := open(t, u, postgres.Options{Logger: zerolog.Nop()})
	now := time.Now()
	const n = 200
	evs := make([]*dedupe.Event, n)
	for i := range evs {
		evs[i] = &dedupe.Event{Source: "s", EventID: fmt.Sprint(i), ReceivedAt: now, Body: []byte("x")}
	}
	if _, err := a.IngestEvents(ctx, evs, []string{"web"}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	for _, db := range []*postgres.DB{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				jobs, err := db.Claim(ctx, 7, time.Minute, now, nil)
				if err != nil {
					t.Error(err)
					return
				}
				if len(jobs) == 0 {
					return
				}
				mu.Lock()
				for _, j := range jobs {
					seen[j.Delivery]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("claimed %d deliveries, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Fatalf("delivery %d claimed %d times", id, c)
		}
	}
	if st, err := a.QueueStats(ctx); err != nil || st.ByStatus[queue.Running] != n {
		t.Fatalf("queue %+v, %v; want %d running", st, err, n)
	}
}

// The claim (its subquery, as claimSQL has it) walks deliveries_due in its
// ORDER BY, with no sort: the index's partial condition is the claim's, so
// the planner can use it.
func TestClaimUsesTheDueIndex(t *testing.T) {
	db := open(t, freshSchema(t), postgres.Options{Logger: zerolog.Nop()})
	ctx := context.Background()
	if _, err := db.Exec(ctx, `DO $$ DECLARE plan text := ''; line text; BEGIN
		SET LOCAL enable_seqscan = off;
		SET LOCAL enable_sort = off;
		FOR line IN EXECUTE 'EXPLAIN SELECT id, run_at FROM deliveries WHERE status IN (''pending'', ''retrying'', ''running'') AND run_at <= 0
			AND id <> ALL (ARRAY[]::bigint[]) ORDER BY run_at, id LIMIT 10 FOR UPDATE SKIP LOCKED' LOOP
			plan := plan || line || E'\n';
		END LOOP;
		IF plan NOT LIKE '%Index Scan using deliveries_due%' OR plan LIKE '%Sort%' THEN RAISE 'claim plan: %', plan; END IF;
	END $$`); err != nil {
		t.Fatal(err)
	}
}

// Servers starting together on an empty database migrate it once, one at
// a time, and all open.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	u := freshSchema(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := postgres.Open(context.Background(), u, postgres.Options{Logger: zerolog.Nop()})
			if err == nil {
				db.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
