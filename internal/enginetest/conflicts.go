package enginetest

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"hookbox/dedupe"
	"hookbox/view"
)

var conflictTests = []test{
	{"Secret kept with the event", testSecretKept},
	{"Conflicting copies kept", testConflictsKept},
	{"Conflicting copies bounded", testConflictsBounded},
	{"Conflicting copies swept with the body", testConflictsSwept},
}

// Which secret verified an event is stored with it and read back; a
// duplicate verified by another secret leaves the first's; an event no
// secret was checked for has none.
func testSecretKept(t *testing.T, e Engine) {
	ctx := context.Background()
	ev := event("evt_secret")
	ev.SecretIndex, ev.SecretCount = 1, 3
	res, err := e.IngestEvent(ctx, ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	dup := event("evt_secret")
	dup.SecretIndex, dup.SecretCount = 2, 3
	if r, err := e.IngestEvent(ctx, dup, nil); err != nil || !r.Duplicate {
		t.Fatalf("duplicate: %+v, %v", r, err)
	}
	got, err := e.GetEvent(ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.SecretIndex != 1 || got.SecretCount != 3 {
		t.Errorf("stored secret %d of %d, want index 1 of 3 (the first copy's)", got.SecretIndex, got.SecretCount)
	}
	d, err := view.LoadDetail(ctx, e, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.SecretText() != "secret 2 of 3" {
		t.Errorf("detail says %q, want secret 2 of 3", d.SecretText())
	}
	open := ingest(t, e, "evt_unsigned", t0)
	if got, err := e.GetEvent(ctx, open); err != nil || got.SecretCount != 0 {
		t.Errorf("unsigned event: secret count %d, %v; want 0", got.SecretCount, err)
	}
	if d, err := view.LoadDetail(ctx, e, open); err != nil || d.SecretText() != "" || d.Secrets != 0 {
		t.Errorf("unsigned event's detail: %q, %v; want no secret", d.SecretText(), err)
	}
}

// A redelivery with another body keeps its body, time, headers and
// content type beside the event; a plain redelivery (the kept body again)
// and a new event keep nothing there.
func testConflictsKept(t *testing.T, e Engine) {
	ctx := context.Background()
	id := ingest(t, e, "evt_c", t0, "web")
	if cs := mustConflicts(t, e, id); len(cs) != 0 {
		t.Fatalf("a new event has %d conflicting copies, want none", len(cs))
	}
	same := event("evt_c")
	same.ReceivedAt = t0.Add(time.Second)
	if r, err := e.IngestEvent(ctx, same, nil); err != nil || r.Conflict {
		t.Fatalf("plain redelivery: %+v, %v", r, err)
	}
	if cs := mustConflicts(t, e, id); len(cs) != 0 {
		t.Fatalf("a plain redelivery kept %d copies, want none", len(cs))
	}
	other := event("evt_c")
	other.ReceivedAt = t0.Add(time.Minute)
	other.ContentType = "text/plain"
	other.Headers = http.Header{"X-Copy": {"2"}}
	other.Body = []byte("<script>alert(1)</script>")
	if r, err := e.IngestEvent(ctx, other, nil); err != nil || !r.Conflict {
		t.Fatalf("conflicting redelivery: %+v, %v", r, err)
	}
	empty := event("evt_c")
	empty.ReceivedAt = t0.Add(2 * time.Minute)
	empty.Body = nil
	if r, err := e.IngestEvent(ctx, empty, nil); err != nil || !r.Conflict {
		t.Fatalf("redelivery with an empty body: %+v, %v", r, err)
	}
	cs := mustConflicts(t, e, id)
	if len(cs) != 2 {
		t.Fatalf("%d copies kept, want 2", len(cs))
	}
	c := cs[0]
	if string(c.Body) != "<script>alert(1)</script>" || c.BodySize != int64(len(c.Body)) || !c.ReceivedAt.Equal(other.ReceivedAt) ||
		c.ContentType != "text/plain" || c.Headers.Get("X-Copy") != "2" {
		t.Errorf("first copy %+v, want the conflicting body, its time, type and headers", c)
	}
	if cs[1].Body == nil || len(cs[1].Body) != 0 || cs[1].BodySize != 0 || !cs[1].ReceivedAt.Equal(empty.ReceivedAt) {
		t.Errorf("second copy %+v, want an empty body at %s", cs[1], empty.ReceivedAt)
	}
	got, err := e.GetEvent(ctx, id)
	if err != nil || string(got.Body) != `{"id":"evt_c"}` || got.Conflicts != 2 {
		t.Fatalf("event: %+v, %v; want the first body, 2 conflicts", got, err)
	}
	d, err := view.LoadDetail(ctx, e, id)
	if err != nil || len(d.ConflictCopies) != 2 || d.ConflictCopies[0].BodySize != 25 || d.ConflictCopies[0].ReceivedAt != view.Time(other.ReceivedAt) {
		t.Fatalf("detail's copies %+v, %v; want both, oldest first", d.ConflictCopies, err)
	}
	if cs := mustConflicts(t, e, id+1000); len(cs) != 0 {
		t.Errorf("an unknown event has %d copies", len(cs))
	}
}

// Only the latest dedupe.KeptConflicts copies of an event stay, each
// event's own.
func testConflictsBounded(t *testing.T, e Engine) {
	ctx := context.Background()
	a := ingest(t, e, "evt_a", t0)
	b := ingest(t, e, "evt_b", t0)
	const n = dedupe.KeptConflicts + 3
	for i := range n {
		ev := event("evt_a")
		ev.ReceivedAt = t0.Add(time.Duration(i+1) * time.Second)
		ev.Body = fmt.Appendf(nil, `{"copy":%d}`, i)
		if r, err := e.IngestEvent(ctx, ev, nil); err != nil || !r.Conflict {
			t.Fatalf("copy %d: %+v, %v", i, r, err)
		}
	}
	ev := event("evt_b")
	ev.Body = []byte(`{"b":true}`)
	if _, err := e.IngestEvent(ctx, ev, nil); err != nil {
		t.Fatal(err)
	}
	cs := mustConflicts(t, e, a)
	if len(cs) != dedupe.KeptConflicts {
		t.Fatalf("%d copies kept, want %d", len(cs), dedupe.KeptConflicts)
	}
	for i, c := range cs {
		if want := fmt.Sprintf(`{"copy":%d}`, n-dedupe.KeptConflicts+i); string(c.Body) != want {
			t.Errorf("copy %d: %s, want %s (the latest, oldest first)", i, c.Body, want)
		}
	}
	if got, err := e.GetEvent(ctx, a); err != nil || got.Conflicts != n {
		t.Errorf("conflicts counted %d, %v; want every one, %d", got.Conflicts, err, n)
	}
	if cs := mustConflicts(t, e, b); len(cs) != 1 || string(cs[0].Body) != `{"b":true}` {
		t.Errorf("the other event's copies: %+v", cs)
	}
}

// The sweep that drops an event's body drops its conflicting copies; one
// whose body stays keeps them; deleting the event's key deletes them.
func testConflictsSwept(t *testing.T, e Engine) {
	ctx := context.Background()
	now := t0.Add(100 * 24 * time.Hour)
	conflict := func(id string, at time.Time) int64 {
		t.Helper()
		n := ingest(t, e, id, at)
		ev := event(id)
		ev.ReceivedAt = at.Add(time.Second)
		ev.Body = []byte(`{"other":true}`)
		if r, err := e.IngestEvent(ctx, ev, nil); err != nil || !r.Conflict {
			t.Fatalf("%s: %+v, %v", id, r, err)
		}
		return n
	}
	ancient := conflict("ancient", now.Add(-100*24*time.Hour))
	old := conflict("old", now.Add(-40*24*time.Hour))
	recent := conflict("recent", now.Add(-24*time.Hour))
	ingest(t, e, "newest", now) // the newest key stays anyway
	swept, deleted, err := e.Sweep(ctx, now.Add(-30*24*time.Hour), now.Add(-90*24*time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	if swept != 2 || deleted != 1 {
		t.Fatalf("swept %d and deleted %d, want 2 and 1", swept, deleted)
	}
	if cs := mustConflicts(t, e, ancient); len(cs) != 0 {
		t.Errorf("deleted event: %d copies left", len(cs))
	}
	if cs := mustConflicts(t, e, old); len(cs) != 0 {
		t.Errorf("swept event: %d copies left, want none", len(cs))
	}
	if cs := mustConflicts(t, e, recent); len(cs) != 1 {
		t.Errorf("recent event: %d copies, want its 1", len(cs))
	}
	// A copy of a swept event is no conflict (no body to differ from):
	// nothing is kept for it.
	ev := event("old")
	ev.ReceivedAt = now
	ev.Body = []byte(`{"later":true}`)
	if r, err := e.IngestEvent(ctx, ev, nil); err != nil || r.Conflict {
		t.Fatalf("copy of a swept event: %+v, %v", r, err)
	}
	if cs := mustConflicts(t, e, old); len(cs) != 0 {
		t.Errorf("swept event: %d copies after a redelivery, want none", len(cs))
	}
}

func mustConflicts(tb testing.TB, e Engine, id int64) []dedupe.Conflict {
	tb.Helper()
	cs, err := e.Conflicts(context.Background(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return cs
}
