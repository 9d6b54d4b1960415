package main

import (
	"hookbox/provider"
	"hookbox/web"
)

// WebHandler is the web UI and the JSON API over the running serve's
// store, for a listener to mount at / (they answer / and /api/). It
// checks no token: whoever mounts it does. Call it after Run; register
// its Shutdown with the listener's server (RegisterOnShutdown).
func (m *Main) WebHandler() *web.Handler {
	var store web.Store
	if m.PG != nil {
		store = m.PG
	} else {
		store = m.DB
	}
	sources := make(map[string]provider.Options, len(m.Config.Sources))
	for _, s := range m.Config.Sources {
		sources[s.Name] = s.ProviderOptions()
	}
	o := web.Options{Targets: m.Config.Targets, Sources: sources, Now: m.Now, Logger: m.component("web"),
		AnyHost: m.Config.Admin.Token != "", Sink: m.LocalSink}
	if m.Health != nil {
		o.Health = m.Health
	}
	return web.New(store, o)
}

// mountWeb serves the web UI and the JSON API on the admin routes (the
// admin listener, or the local sink's): at / and under /api/. Behind a
// token it answers any Host (a proxy forwards its own name); without one,
// only loopback names and addresses, against DNS rebinding.
func (m *Main) mountWeb() {
	h := m.WebHandler()
	m.web = h
	m.Admin.Mount("/", h)
}
