package enginetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"hookbox/dedupe"
)

// The filters the admin API's event list adds: the type, a text the
// provider's event id holds, and the events after one (a live tail), each
// with the others and with paging.
func testListTypeTextAfter(t *testing.T, e Engine) {
	ctx := context.Background()
	var ids []int64
	for i, ev := range []struct{ id, typ string }{
		{"evt_paid_1", "invoice.paid"}, {"evt_fail_2", "invoice.failed"}, {"evt_paid_3", "invoice.paid"},
		{"EVT_PAID_4", "invoice.paid"}, {"evt_%_5", "charge.refunded"},
	} {
		in := event(ev.id)
		in.Type = ev.typ
		in.ReceivedAt = t0.Add(time.Duration(i) * time.Second)
		res, err := e.IngestEvent(ctx, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ID)
	}
	got := func(f dedupe.Filter) []string {
		t.Helper()
		var out []string
		for _, ev := range mustList(t, e, f) {
			out = append(out, ev.EventID)
		}
		return out
	}
	for _, c := range []struct {
		name string
		f    dedupe.Filter
		want []string
	}{
		{"Type", dedupe.Filter{Type: "invoice.paid"}, []string{"EVT_PAID_4", "evt_paid_3", "evt_paid_1"}},
		{"Type, a page", dedupe.Filter{Type: "invoice.paid", Limit: 1, Before: ids[3]}, []string{"evt_paid_3"}},
		{"Id text is case-sensitive", dedupe.Filter{IDContains: "paid"}, []string{"evt_paid_3", "evt_paid_1"}},
		{"Id text is no pattern", dedupe.Filter{IDContains: "%"}, []string{"evt_%_5"}},
		{"Id text and type", dedupe.Filter{IDContains: "_3", Type: "invoice.paid"}, []string{"evt_paid_3"}},
		{"After", dedupe.Filter{After: ids[2]}, []string{"evt_%_5", "EVT_PAID_4"}},
		{"After and before", dedupe.Filter{After: ids[0], Before: ids[3]}, []string{"evt_paid_3", "evt_fail_2"}},
		{"After the newest", dedupe.Filter{After: ids[4]}, nil},
		{"No such type", dedupe.Filter{Type: "invoice"}, nil},
	} {
		if g := got(c.f); !slices.Equal(g, c.want) {
			t.Errorf("%s: List(%+v)=%q, want %q", c.name, c.f, g, c.want)
		}
	}
}
