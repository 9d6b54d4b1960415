package order_test

import (
	"slices"
	"testing"

	"hookbox/order"
)

// The orders a store was told: none at first; Set copies what it is given
// (a caller's later change of its map orders nothing); Names are sorted
// and never nil, which a store passes as a list of targets to leave alone.
func TestTargets(t *testing.T) {
	var ts order.Targets
	if ts.Any() || ts.Names() == nil || len(ts.Names()) != 0 {
		t.Fatalf("zero value: any %v, names %#v; want none, an empty list", ts.Any(), ts.Names())
	}
	if _, ok := ts.Lane("web"); ok {
		t.Fatal("zero value orders web")
	}
	m := map[string]order.Lane{"web": {Mode: order.FIFO}, "audit": {Mode: order.Latest}}
	ts.Set(m)
	m["mail"] = order.Lane{Mode: order.Coalesce}
	if l, ok := ts.Lane("web"); !ok || l.Mode != order.FIFO {
		t.Errorf("web: %+v %v, want fifo", l, ok)
	}
	if _, ok := ts.Lane("mail"); ok {
		t.Error("a change to the map given to Set ordered mail")
	}
	if got := ts.Names(); !ts.Any() || !slices.Equal(got, []string{"audit", "web"}) {
		t.Errorf("names %v (any %v), want [audit web]", got, ts.Any())
	}
	ts.Set(nil)
	if ts.Any() || ts.Names() == nil || len(ts.Names()) != 0 {
		t.Errorf("after Set(nil): any %v, names %#v; want none", ts.Any(), ts.Names())
	}
}
