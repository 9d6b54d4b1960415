package main

import (
	"fmt"

	"hookbox/config"
	"hookbox/receiver"
	"hookbox/signature"
)

// buildSources turns [[source]] into receiver sources with their verifiers.
func buildSources(cfg config.Config) ([]receiver.Source, error) {
	out := make([]receiver.Source, 0, len(cfg.Sources))
	for _, s := range cfg.Sources {
		v, err := signature.New(signature.Options{
			Scheme:    s.Verify,
			Secrets:   s.Secrets,
			Tolerance: s.Tolerance.D(),
			Header:    s.Header,
			Algorithm: s.Algorithm,
			Encoding:  s.Encoding,
			Prefix:    s.Prefix,
		})
		if err != nil {
			return nil, fmt.Errorf("source %s: %w", s.Name, err)
		}
		id, err := receiver.ParseLocation(s.EventID)
		if err != nil {
			return nil, fmt.Errorf("source %s: event_id: %w", s.Name, err)
		}
		var typ receiver.Location
		if s.EventType != "" {
			if typ, err = receiver.ParseLocation(s.EventType); err != nil {
				return nil, fmt.Errorf("source %s: event_type: %w", s.Name, err)
			}
		}
		src := receiver.Source{
			Name:      s.Name,
			Verifier:  v,
			EventID:   id,
			EventType: typ,
			MaxBody:   s.MaxBody.Int(),
			Slack:     s.Verify == "slack",
		}
		switch s.Verify {
		case "gitlab":
			src.Redact = []string{"X-Gitlab-Token"}
		case "token", "hmac":
			// The token, or the signature under a header name of the
			// user's choosing (credentialHeader may not recognise it).
			src.Redact = []string{s.Header}
		}
		out = append(out, src)
	}
	return out, nil
}
