package dedupe_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/dedupe"
	"hookbox/store"
)

// MustOpen opens an event store on a fresh database in a temp dir.
func MustOpen(tb testing.TB) (*dedupe.Store, *store.DB) {
	tb.Helper()
	db, err := store.Open(filepath.Join(tb.TempDir(), "hookbox.db"), store.Options{Logger: zerolog.Nop()})
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return dedupe.New(db), db
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func event(id string) *dedupe.Event {
	return &dedupe.Event{
		Source:      "stripe",
		EventID:     id,
		Type:        "invoice.paid",
		ReceivedAt:  t0,
		ContentType: "application/json",
		Headers:     http.Header{"Stripe-Signature": {"t=1,v1=00"}},
		Body:        []byte(`{"id":"` + id + `"}`),
	}
}

func mustList(tb testing.TB, s *dedupe.Store) []dedupe.Stored {
	tb.Helper()
	list, err := s.List(context.Background(), dedupe.Filter{})
	if err != nil {
		tb.Fatal(err)
	}
	return list
}

func TestIngest_NewThenDuplicate(t *testing.T) {
	s, _ := MustOpen(t)
	ctx := context.Background()
	res, err := s.Ingest(ctx, event("evt_1"))
	if err != nil || res.Duplicate || res.ID == 0 {
		t.Fatalf("first ingest: %+v, %v; want new", res, err)
	}
	later := event("evt_1")
	later.ReceivedAt = t0.Add(time.Minute)
	later.Body = []byte(`{"id":"evt_1","changed":true}`)
	dup, err := s.Ingest(ctx, later)
	if err != nil || !dup.Duplicate || !dup.Conflict || dup.ID != res.ID {
		t.Fatalf("second ingest: %+v, %v; want a conflicting duplicate of %d", dup, err, res.ID)
	}
	got, err := s.Get(ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Body) != `{"id":"evt_1"}` || got.Redeliveries != 1 || got.Conflicts != 1 || !got.LastSeenAt.Equal(later.ReceivedAt) {
		t.Fatalf("stored %+v, want the first body, 1 redelivery, 1 conflict, last seen %s", got, later.ReceivedAt)
	}
	if got.Headers.Get("Stripe-Signature") != "t=1,v1=00" || !got.ReceivedAt.Equal(t0) {
		t.Fatalf("stored headers=%v received=%s", got.Headers, got.ReceivedAt)
	}
	if _, err := s.Get(ctx, 999); !errors.Is(err, dedupe.ErrNotFound) {
		t.Fatalf("Get(999)=%v, want ErrNotFound", err)
	}
}

func TestIngest_ConcurrentDuplicates(t *testing.T) {
	s, _ := MustOpen(t)
	var mu sync.Mutex
	news, dups := 0, 0
	s.OnNew = func(tx *sql.Tx, ev *dedupe.Event) error { news++; return nil }
	const n = 25
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := s.Ingest(context.Background(), event("same"))
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			if res.Duplicate {
				dups++
			}
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if news != 1 || dups != n-1 {
		t.Fatalf("OnNew ran %d times and %d duplicates, want 1 and %d", news, dups, n-1)
	}
	list := mustList(t, s)
	if len(list) != 1 || list[0].Redeliveries != n-1 {
		t.Fatalf("stored %+v, want one event with %d redeliveries", list, n-1)
	}
}

func TestIngest_FailureInsideTransaction(t *testing.T) {
	s, db := MustOpen(t)
	ctx := context.Background()
	boom := errors.New("enqueue failed")

	t.Run("OnNew error rolls back the event", func(t *testing.T) {
		s.OnNew = func(tx *sql.Tx, ev *dedupe.Event) error {
			if ev.ID == 0 {
				t.Errorf("OnNew ran before the event row was written")
			}
			return boom
		}
		if _, err := s.Ingest(ctx, event("evt_fail")); !errors.Is(err, boom) {
			t.Fatalf("Ingest err=%v, want it to wrap the OnNew error", err)
		}
		if list := mustList(t, s); len(list) != 0 {
			t.Fatalf("stored %+v after a failed ingest, want nothing", list)
		}
		s.OnNew = nil
		res, err := s.Ingest(ctx, event("evt_fail"))
		if err != nil || res.Duplicate {
			t.Fatalf("ingest again: %+v, %v; want accepted as new", res, err)
		}
		if list := mustList(t, s); len(list) != 1 || list[0].Redeliveries != 0 {
			t.Fatalf("stored %+v, want one event, no redeliveries", list)
		}
	})

	t.Run("OnDuplicate error rolls back the redelivery count", func(t *testing.T) {
		s.OnDuplicate = func(tx *sql.Tx, id int64, now time.Time) (int64, error) { return 0, boom }
		if _, err := s.Ingest(ctx, event("evt_fail")); !errors.Is(err, boom) {
			t.Fatalf("Ingest err=%v, want the OnDuplicate error", err)
		}
		s.OnDuplicate = nil
		if list := mustList(t, s); len(list) != 1 || list[0].Redeliveries != 0 {
			t.Fatalf("stored %+v, want no redelivery counted", list)
		}
	})

	t.Run("One failure in a batch", func(t *testing.T) {
		// Failing events are those whose id starts with "bad". Each OnNew
		// records the commit count it ran under: equal counts mean one batch.
		var mu sync.Mutex
		batchOf := map[string]int64{}
		s.OnNew = func(tx *sql.Tx, ev *dedupe.Event) error {
			mu.Lock()
			batchOf[ev.EventID] = db.Stats().Commits
			mu.Unlock()
			if strings.HasPrefix(ev.EventID, "bad") {
				return boom
			}
			return nil
		}
		defer func() { s.OnNew = nil }()
		for round := 0; ; round++ {
			if round == 50 {
				t.Fatal("no batch held both a failing and a succeeding ingest in 50 rounds")
			}
			const n = 30
			ids := make([]string, n)
			errs := make([]error, n)
			for i := range ids {
				ids[i] = fmt.Sprintf("ok-%d-%d", round, i)
				if i%4 == 0 {
					ids[i] = fmt.Sprintf("bad-%d-%d", round, i)
				}
			}
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, errs[i] = s.Ingest(ctx, event(ids[i]))
				}()
			}
			close(start)
			wg.Wait()

			stored := map[string]bool{}
			for _, e := range mustList(t, s) {
				stored[e.EventID] = true
			}
			type tally struct{ bad, ok int }
			batches := map[int64]tally{}
			for i, id := range ids {
				bad := strings.HasPrefix(id, "bad")
				tl := batches[batchOf[id]]
				if bad {
					tl.bad++
					if !errors.Is(errs[i], boom) || stored[id] {
						t.Fatalf("%s: err=%v stored=%v, want the error and nothing stored", id, errs[i], stored[id])
					}
				} else {
					tl.ok++
					if errs[i] != nil || !stored[id] {
						t.Fatalf("%s: err=%v stored=%v, want committed", id, errs[i], stored[id])
					}
				}
				batches[batchOf[id]] = tl
			}
			for _, tl := range batches {
				if tl.bad > 0 && tl.ok > 0 {
					return
				}
			}
		}
	})
}

func TestIngest_EmptyAndBinaryBodies(t *testing.T) {
	s, _ := MustOpen(t)
	ctx := context.Background()
	for _, body := range [][]byte{nil, {}, {0xff, 0x00, 0xfe, '\n', 0x80}} {
		ev := event(fmt.Sprintf("b-%x", body))
		ev.Body = body
		res, err := s.Ingest(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Body, body) || got.BodySize != int64(len(body)) || got.Swept {
			t.Fatalf("stored body=%q size=%d swept=%v, want %q", got.Body, got.BodySize, got.Swept, body)
		}
	}
}

func TestList_Filter(t *testing.T) {
	s, _ := MustOpen(t)
	ctx := context.Background()
	for i, src := range []string{"a", "b", "a", "a"} {
		ev := event(fmt.Sprint(i))
		ev.Source = src
		ev.ReceivedAt = t0.Add(time.Duration(i) * time.Minute)
		if _, err := s.Ingest(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.List(ctx, dedupe.Filter{Source: "a", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].EventID != "3" || got[1].EventID != "2" {
		t.Fatalf("List(source a, limit 2)=%+v, want events 3 then 2 (newest first)", got)
	}
	if got, _ := s.List(ctx, dedupe.Filter{Since: t0.Add(time.Minute), Until: t0.Add(3 * time.Minute)}); len(got) != 2 {
		t.Fatalf("List(since, until)=%d events, want 2", len(got))
	}
}
