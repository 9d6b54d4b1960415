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
	o := web.Options{Targets: m.Config.Targets, Sources: sources, Now: m.Now, Logger: m.component("web")}
	if m.Health != nil {
		o.Health = m.Health
	}
	return web.New(store, o)
}
