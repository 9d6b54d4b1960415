package receiver

import (
	"cmp"
	"fmt"

	"hookbox/config"
	"hookbox/location"
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
