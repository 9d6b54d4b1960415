package config

import (
	"slices"

	"hookbox/location"
	"hookbox/order"
	"hookbox/provider"
)

// validateOrderKeys fills a source's order_key and order_version from its
// preset when it sets none, and checks them.
func validateOrderKeys(sc scope, s *Source, p provider.Provider) {
	if s.OrderKey == "" && s.OrderVersion == "" {
		s.OrderKey, s.OrderVersion = p.OrderKey, p.OrderVersion
	}
	for _, f := range []struct {
		key  string
		spec *string
	}{{"order_key", &s.OrderKey}, {"order_version", &s.OrderVersion}} {
		if *f.spec == "" {
			continue
		}
		loc, err := location.Parse(*f.spec, location.Order)
		if err != nil {
			sc.add(f.key, *f.spec, err.Error())
			continue
		}
		*f.spec = loc.Spec()
	}
	if s.OrderVersion != "" && s.OrderKey == "" {
		sc.add("order_version", s.OrderVersion, "needs order_key: a version orders the events of one resource, which order_key names")
	}
}

// validateOrder checks a target's order and coalesce_wait.
func validateOrder(sc scope, t *Target, sources []Source) {
	m, err := order.ParseMode(t.Order)
	if err != nil {
		sc.add("order", t.Order, err.Error())
		return
	}
	if t.Order == "" {
		t.Order = string(order.None)
	}
	if t.CoalesceWait != 0 && m != order.Coalesce {
		sc.add("coalesce_wait", t.CoalesceWait.String(), `only with order = "coalesce"`)
	}
	if m == order.None {
		return
	}
	// A source without a key sends events without a lane (delivered as
	// they come); a target none of whose sources has one orders nothing.
	names := t.SourceNames()
	for _, s := range sources {
		if slices.Contains(names, s.Name) && s.OrderKey != "" {
			return
		}
	}
	sc.addf("order", t.Order, "none of the target's sources has an order_key (nor a preset that gives one): its events would have no lane; set order_key (and order_version) on the source")
}

// Lane is how t orders its deliveries of one order key.
func (t Target) Lane() order.Lane {
	m, err := order.ParseMode(t.Order)
	if err != nil {
		m = order.None
	}
	return order.Lane{Mode: m, Wait: t.CoalesceWait.D()}
}

// Lanes is the order of each ordered target, by name: what the store
// engines are told (SetOrder).
func (c Config) Lanes() map[string]order.Lane {
	out := map[string]order.Lane{}
	for _, t := range c.Targets {
		if l := t.Lane(); l.Mode != order.None {
			out[t.Name] = l
		}
	}
	return out
}
