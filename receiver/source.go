package receiver

import (
	"cmp"
	"fmt"

	"hookbox/config"
	"hookbox/location"
	"hookbox/order"
	"hookbox/provider"
)

// NewSource builds the source name from its provider in the registry
// (provider.Lookup(o.Scheme)): the verifier for o, the event locations o
// gives or else the provider's, the provider's handshake for o, the
// headers it redacts and the URL the provider calls (o.PublicURL). maxBody 0 means the server's. The error says which part of
// o is wrong (an event_id or event_type location, or what provider.New
// refused) and never contains a secret.
func NewSource(name string, maxBody int64, o provider.Options) (Source, error) {
	v, err := provider.New(o)
	if err != nil {
		return Source{}, err
	}
	p, _ := provider.Lookup(o.Scheme) // New found it
	src := Source{
		Name:      name,
		Verifier:  v,
		MaxBody:   maxBody,
		Redact:    p.RedactHeaders(o),
		PublicURL: o.PublicURL,
	}
	if p.Handshake != nil {
		src.Handshake = p.Handshake(o)
	}
	id := cmp.Or(o.EventID, p.EventID)
	if id == "" {
		return Source{}, fmt.Errorf("event_id: required for verify = %q", o.Scheme)
	}
	if src.EventID, err = location.Parse(id, location.ID); err != nil {
		return Source{}, fmt.Errorf("event_id: %w", err)
	}
	if typ := cmp.Or(o.EventType, p.EventType); typ != "" {
		if src.EventType, err = location.Parse(typ, location.Type); err != nil {
			return Source{}, fmt.Errorf("event_type: %w", err)
		}
	}
	key, version := o.OrderKey, o.OrderVersion
	if key == "" && version == "" {
		key, version = p.OrderKey, p.OrderVersion
	}
	if key != "" {
		if src.OrderKey, err = location.Parse(key, location.Order); err != nil {
			return Source{}, fmt.Errorf("order_key: %w", err)
		}
	}
	if version != "" {
		if src.OrderVersion, err = location.Parse(version, location.Order); err != nil {
			return Source{}, fmt.Errorf("order_version: %w", err)
		}
	}
	return src, nil
}

// Sources builds the receiver's sources of a config's [[source]] tables.
// The error names the source.
func Sources(cfg []config.Source) ([]Source, error) {
	out := make([]Source, len(cfg))
	for i, s := range cfg {
		var err error
		if out[i], err = NewSource(s.Name, s.MaxBody.Int(), s.ProviderOptions()); err != nil {
			return nil, fmt.Errorf("source %s: %w", s.Name, err)
		}
	}
	return out, nil
}

// orderOf finds ev's order key and version. Neither is required: an event
// without a key has no lane, and one whose version is missing or
// unreadable (neither a number nor an RFC 3339 time) keeps its receipt
// order in its lane; the unreadable one is logged and stored as found, so
// that `hookbox event` shows it.
func (s *Server) orderOf(src *Source, req *location.Request, ev *Event) {
	key, err := src.OrderKey.Find(req)
	if err != nil {
		return
	}
	if err := validValue(key); err != nil {
		s.log.Warn().Str("source", src.Name).Str("event_id", ev.EventID).
			Msg("order key from " + src.OrderKey.String() + " " + err.Error() + ": stored without a lane")
		return
	}
	ev.OrderKey = key
	if len(src.OrderVersion) == 0 {
		return
	}
	v, err := src.OrderVersion.Find(req)
	if err != nil {
		return
	}
	if err := validValue(v); err != nil {
		s.log.Warn().Str("source", src.Name).Str("event_id", ev.EventID).
			Msg("order version from " + src.OrderVersion.String() + " " + err.Error() + ": ordered by receipt")
		return
	}
	ev.OrderVersion = v
	rank, ok := order.Rank(v)
	if !ok {
		s.log.Warn().Str("source", src.Name).Str("event_id", ev.EventID).Str("order_key", key).Str("order_version", v).
			Msg("order version from " + src.OrderVersion.String() + " is neither a number nor an RFC 3339 time: ordered by receipt")
		return
	}
	ev.OrderRank = rank
}
