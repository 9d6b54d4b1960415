package order

import (
	"sort"
	"sync/atomic"
)

// Targets holds the order of each ordered target, as a store was told it
// (SetOrder), for the store's many readers at once. Its zero value orders
// no target.
type Targets struct {
	p atomic.Pointer[map[string]Lane]
}

// Set replaces the orders with a copy of lanes: the targets it names are
// ordered, the others not.
func (t *Targets) Set(lanes map[string]Lane) {
	m := make(map[string]Lane, len(lanes))
	for k, v := range lanes {
		m[k] = v
	}
	t.p.Store(&m)
}

// Lane is target's order, and whether it is ordered.
func (t *Targets) Lane(target string) (Lane, bool) {
	m := t.p.Load()
	if m == nil {
		return Lane{}, false
	}
	l, ok := (*m)[target]
	return l, ok
}

// Any reports whether some target is ordered.
func (t *Targets) Any() bool {
	m := t.p.Load()
	return m != nil && len(*m) > 0
}

// Names are the ordered targets, sorted; empty, never nil, when none is.
func (t *Targets) Names() []string {
	names := []string{}
	if m := t.p.Load(); m != nil {
		for name := range *m {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}
