package provider

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"hookbox/location"
)

const (
	discordSigHeader = "X-Signature-Ed25519"
	discordTSHeader  = "X-Signature-Timestamp"
)

// discordProvider is Discord's interactions endpoint: X-Signature-Ed25519
// is the hex of an Ed25519 signature over X-Signature-Timestamp followed by
// the body, checked with the application's public key, the source's
// "secret" (64 hex digits, from the developer portal), as
// discord-interactions (verifyKey) checks it, hex of either case. Discord
// checks that the endpoint refuses a bad signature, and sends a PING
// ({"type":1}) that must be answered {"type":1}: it is not stored. An
// interaction's id is its JSON id; its type is the interaction type
// (2 for a command, 3 for a component, ...).
//
// Tolerance: discord-interactions does not check the timestamp. Discord
// never retries an interaction, which must be answered within 3 seconds,
// so a short window refuses nothing genuine: 5 minutes, both directions.
var discordProvider = Provider{
	Name:          "discord",
	Signature:     "`X-Signature-Ed25519` (hex Ed25519 of `X-Signature-Timestamp` + body; the secret is the application's hex public key); answers PING",
	Docs:          "https://discord.com/developers/docs/interactions/overview#setting-up-an-endpoint",
	EventID:       "json:id",
	EventType:     "json:type",
	Tolerance:     5 * time.Minute,
	Redact:        []string{discordSigHeader},
	SecretExample: "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
	Handshake:     func(Options) Handshaker { return discordHandshake },
	verifier: func(o Options) (Verifier, error) {
		v := &discordVerifier{tol: o.Tolerance}
		for i, s := range o.Secrets {
			k, err := discordKey(s)
			if err != nil {
				return nil, fmt.Errorf("signature: discord: secret %d: %w", i+1, err)
			}
			v.keys = append(v.keys, k)
		}
		return v, nil
	},
	secret: func(s string) error {
		_, err := discordKey(s)
		return err
	},
}

// discordKey decodes an application's public key.
func discordKey(s string) (ed25519.PublicKey, error) {
	k := make(ed25519.PublicKey, ed25519.PublicKeySize)
	if !decodeHex(k, s, false) {
		return nil, errors.New("want the application's public key: 64 hex digits, as the developer portal shows it")
	}
	return k, nil
}

type discordVerifier struct {
	keys []ed25519.PublicKey
	tol  time.Duration
}

func (v *discordVerifier) Verify(h http.Header, body []byte, now time.Time) error {
	sig, ts := h.Get(discordSigHeader), h.Get(discordTSHeader)
	switch {
	case sig == "":
		return fmt.Errorf("discord: %s: %w", discordSigHeader, ErrMissing)
	case ts == "":
		return fmt.Errorf("discord: %s: %w", discordTSHeader, ErrMissing)
	}
	t, ok := parseUnix(ts)
	if !ok {
		return fmt.Errorf("discord: %s: not a decimal Unix time: %w", discordTSHeader, ErrMalformed)
	}
	var want [ed25519.SignatureSize]byte
	if !decodeHex(want[:], sig, false) {
		return fmt.Errorf("discord: %s: not 128 hex digits: %w", discordSigHeader, ErrMalformed)
	}
	if !fresh(t, now, v.tol, true) {
		return fmt.Errorf("discord: %s: %w", discordTSHeader, ErrTimestamp)
	}
	msg := make([]byte, 0, len(ts)+len(body))
	msg = append(append(msg, ts...), body...)
	for _, k := range v.keys {
		if ed25519.Verify(k, msg, want[:]) {
			return nil
		}
	}
	return fmt.Errorf("discord: %s: %w", discordSigHeader, ErrMismatch)
}

// discordHandshake answers a PING with a PONG. A body with an "event" is
// one of Discord's webhook events, whose type 1 is an event, not a PING.
func discordHandshake(r *location.Request) (Reply, bool) {
	doc, err := r.JSON()
	if err != nil {
		return Reply{}, false
	}
	m, _ := doc.(map[string]any)
	if _, isEvent := m["event"]; isEvent || m["type"] != json.Number("1") {
		return Reply{}, false
	}
	return JSONReply(map[string]int{"type": 1}), true
}
