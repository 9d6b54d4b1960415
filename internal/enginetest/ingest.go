package enginetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/dedupe"
	"hookbox/queue"
)

var ingestTests = []test{
	{"New then duplicate", testNewThenDuplicate},
	{"Concurrent duplicates", testConcurrentDuplicates},
	{"Failure rolls back", testIngestFailureRollsBack},
	{"Failures among concurrent ingests", testFailuresAmongConcurrent},
	{"Empty and binary bodies", testEmptyAndBinaryBodies},
	{"Several in one transaction", testIngestEvents},
}

var listTests = []test{
	{"Filter", testListFilter},
	{"Status and pages", testListStatusAndPages},
	{"Type, id text, after", testListTypeTextAfter},
}

func testNewThenDuplicate(t *testing.T, e Engine) {
	ctx := context.Background()
	res, err := e.IngestEvent(ctx, event("evt_1"), []string{"web"})
	if err != nil || res.Duplicate || res.ID == 0 {
		t.Fatalf("first ingest: %+v, %v; want new", res, err)
	}
	later := event("evt_1")
	later.ReceivedAt = t0.Add(time.Minute)
	later.Body = []byte(`{"id":"evt_1","changed":true}`)
	dup, err := e.IngestEvent(ctx, later, []string{"web", "other"})
	if err != nil || !dup.Duplicate || !dup.Conflict || dup.ID != res.ID || later.ID != res.ID {
		t.Fatalf("second ingest: %+v, %v (event ID %d); want a conflicting duplicate of %d", dup, err, later.ID, res.ID)
	}
	got, err := e.GetEvent(ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Body) != `{"id":"evt_1"}` || got.Redeliveries != 1 || got.Conflicts != 1 || !got.LastSeenAt.Equal(later.ReceivedAt) {
		t.Fatalf("stored %+v, want the first body, 1 redelivery, 1 conflict, last seen %s", got, later.ReceivedAt)
	}
	if got.Headers.Get("Stripe-Signature") != "t=1,v1=00" || !got.ReceivedAt.Equal(t0) {
		t.Fatalf("stored headers=%v received=%s", got.Headers, got.ReceivedAt)
	}
	// The redelivery's targets were not looked at: the event keeps the
	// deliveries it was stored with.
	if ds := deliveries(t, e, res.ID); len(ds) != 1 || ds[0].Target != "web" || ds[0].Status != queue.Pending {
		t.Fatalf("deliveries %+v, want one pending to web", ds)
	}
	same := event("evt_1")
	same.ReceivedAt = t0.Add(2 * time.Minute)
	if dup, err := e.IngestEvent(ctx, same, nil); err != nil || !dup.Duplicate || dup.Conflict {
		t.Fatalf("third ingest, the first body again: %+v, %v; want a duplicate without conflict", dup, err)
	}
	if _, err := e.GetEvent(ctx, 999); !errors.Is(err, dedupe.ErrNotFound) {
		t.Fatalf("GetEvent(999)=%v, want ErrNotFound", err)
	}
}

// 25 copies of one event at once: exactly one is new, and it has one
// delivery per target; the others are counted as redeliveries.
func testConcurrentDuplicates(t *testing.T, e Engine) {
	var mu sync.Mutex
	news, dups := 0, 0
	const n = 25
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := e.IngestEvent(context.Background(), event("same"), []string{"a", "b"})
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			if res.Duplicate {
				dups++
			} else {
				news++
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
		t.Fatalf("%d new and %d duplicates, want 1 and %d", news, dups, n-1)
	}
	list := mustList(t, e, dedupe.Filter{})
	if len(list) != 1 || list[0].Redeliveries != n-1 {
		t.Fatalf("stored %+v, want one event with %d redeliveries", list, n-1)
	}
	var targets []string
	for _, d := range deliveries(t, e, list[0].ID) {
		targets = append(targets, d.Target)
	}
	slices.Sort(targets)
	if !slices.Equal(targets, []string{"a", "b"}) {
		t.Fatalf("deliveries to %v, want one to a and one to b", targets)
	}
}

// An ingest whose deliveries cannot be written (here the same target
// twice: one delivery per (event, target)) writes nothing, not even the
// event, which is new again at the next try.
func testIngestFailureRollsBack(t *testing.T, e Engine) {
	ctx := context.Background()
	if _, err := e.IngestEvent(ctx, event("evt_fail"), []string{"web", "web"}); err == nil {
		t.Fatal("ingest with a delivery that cannot be written succeeded, want an error")
	}
	if list := mustList(t, e, dedupe.Filter{}); len(list) != 0 {
		t.Fatalf("stored %+v after a failed ingest, want nothing", list)
	}
	if st, err := e.QueueStats(ctx); err != nil || st.ByStatus[queue.Pending] != 0 {
		t.Fatalf("queue after a failed ingest: %+v, %v; want no delivery", st, err)
	}
	res, err := e.IngestEvent(ctx, event("evt_fail"), []string{"web"})
	if err != nil || res.Duplicate {
		t.Fatalf("ingest again: %+v, %v; want accepted as new", res, err)
	}
	if list := mustList(t, e, dedupe.Filter{}); len(list) != 1 || list[0].Redeliveries != 0 {
		t.Fatalf("stored %+v, want one event, no redeliveries", list)
	}
	if ds := deliveries(t, e, res.ID); len(ds) != 1 {
		t.Fatalf("%d deliveries, want 1", len(ds))
	}
}

// Ingests that fail among others sent at the same moment (which an engine
// may commit together) leave nothing behind, and take none of the others
// with them.
func testFailuresAmongConcurrent(t *testing.T, e Engine) {
	ctx := context.Background()
	const n = 30
	ids := make([]string, n)
	errs := make([]error, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("ok-%d", i)
		if i%4 == 0 {
			ids[i] = fmt.Sprintf("bad-%d", i)
		}
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			targets := []string{"web"}
			if strings.HasPrefix(ids[i], "bad") {
				targets = []string{"web", "web"}
			}
			_, errs[i] = e.IngestEvent(ctx, event(ids[i]), targets)
		}()
	}
	close(start)
	wg.Wait()
	stored := map[string]bool{}
	for _, ev := range mustList(t, e, dedupe.Filter{}) {
		stored[ev.EventID] = true
		if n := len(deliveries(t, e, ev.ID)); n != 1 {
			t.Errorf("%s: %d deliveries, want 1", ev.EventID, n)
		}
	}
	for i, id := range ids {
		if strings.HasPrefix(id, "bad") {
			if errs[i] == nil || stored[id] {
				t.Errorf("%s: err=%v stored=%v, want an error and nothing stored", id, errs[i], stored[id])
			}
		} else if errs[i] != nil || !stored[id] {
			t.Errorf("%s: err=%v stored=%v, want committed", id, errs[i], stored[id])
		}
	}
}

func testEmptyAndBinaryBodies(t *testing.T, e Engine) {
	ctx := context.Background()
	for _, body := range [][]byte{nil, {}, {0xff, 0x00, 0xfe, '\n', 0x80}} {
		ev := event(fmt.Sprintf("b-%x", body))
		ev.Body = body
		res, err := e.IngestEvent(ctx, ev, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.GetEvent(ctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Body, body) || got.BodySize != int64(len(body)) || got.Swept {
			t.Fatalf("stored body=%q size=%d swept=%v, want %q", got.Body, got.BodySize, got.Swept, body)
		}
	}
}

// IngestEvents stores all or none.
func testIngestEvents(t *testing.T, e Engine) {
	ctx := context.Background()
	ingest(t, e, "before", t0, "web")
	if _, err := e.IngestEvents(ctx, []*dedupe.Event{event("x"), event("y")}, []string{"web", "web"}); err == nil {
		t.Fatal("a bulk ingest whose deliveries cannot be written succeeded")
	}
	if n := len(mustList(t, e, dedupe.Filter{})); n != 1 {
		t.Fatalf("%d events after a failed bulk ingest, want the 1 before it", n)
	}
	res, err := e.IngestEvents(ctx, []*dedupe.Event{event("x"), event("before"), event("y")}, []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[0].Duplicate || !res[1].Duplicate || res[2].Duplicate {
		t.Fatalf("results %+v, want new, duplicate, new", res)
	}
	for _, r := range []dedupe.Result{res[0], res[2]} {
		if d := delivery(t, e, r.ID); d.Target != "web" || d.Status != queue.Pending {
			t.Errorf("event %d: delivery %+v, want pending to web", r.ID, d)
		}
	}
}

func testListFilter(t *testing.T, e Engine) {
	ctx := context.Background()
	for i, src := range []string{"a", "b", "a", "a"} {
		ev := event(fmt.Sprint(i))
		ev.Source = src
		ev.ReceivedAt = t0.Add(time.Duration(i) * time.Minute)
		if _, err := e.IngestEvent(ctx, ev, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := mustList(t, e, dedupe.Filter{Source: "a", Limit: 2})
	if len(got) != 2 || got[0].EventID != "3" || got[1].EventID != "2" {
		t.Fatalf("List(source a, limit 2)=%+v, want events 3 then 2 (newest first)", got)
	}
	if got := mustList(t, e, dedupe.Filter{Since: t0.Add(time.Minute), Until: t0.Add(3 * time.Minute)}); len(got) != 2 {
		t.Fatalf("List(since, until)=%d events, want 2", len(got))
	}
	if got[0].Body != nil || got[0].Headers != nil {
		t.Errorf("a listing returned a body or headers: %+v", got[0])
	}
}

// The status filter keeps events with a delivery in that status; Before
// pages through them newest first.
func testListStatusAndPages(t *testing.T, e Engine) {
	done := ingest(t, e, "done", t0, "web")
	j := claimOne(t, e, t0)
	complete(t, e, j, finishOK(j, t0), t0)
	gone := ingest(t, e, "dead", t0, "web")
	j = claimOne(t, e, t0)
	complete(t, e, j, finishDead(j, t0, "boom", "", false), t0)
	queued := ingest(t, e, "pending", t0, "web")
	none := ingest(t, e, "none", t0)
	for status, want := range map[string][]int64{
		queue.Done: {done}, queue.Dead: {gone}, queue.Pending: {queued}, queue.Running: nil, "": {none, queued, gone, done},
	} {
		var ids []int64
		for _, ev := range mustList(t, e, dedupe.Filter{Status: status}) {
			ids = append(ids, ev.ID)
		}
		if !slices.Equal(ids, want) {
			t.Errorf("status %q: events %v, want %v", status, ids, want)
		}
	}
	var paged []int64
	for before := int64(0); ; {
		page := mustList(t, e, dedupe.Filter{Limit: 3, Before: before})
		for _, ev := range page {
			paged = append(paged, ev.ID)
		}
		if len(page) < 3 {
			break
		}
		before = page[len(page)-1].ID
	}
	if want := []int64{none, queued, gone, done}; !slices.Equal(paged, want) {
		t.Errorf("pages of 3: %v, want %v", paged, want)
	}
}
