package provider

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strings"
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
	// An interaction must be answered within 3 seconds, and is never sent
	// again.
	Timeout: 3 * time.Second,
	Retries: Retries{Note: "none: an interaction unanswered in time fails"},
	Samples: []Sample{
		{Type: "2", File: "discord/application_command.json", ID: "1216000000000000002", Resource: "1216000000000000004", Key: "json:guild_id"},
	},
	signer:    discordSigner,
	SenderKey: "the Ed25519 private key of the pair whose public half the source holds (PKCS#8 PEM, or 128 hex digits): Discord keeps its own, so only an endpoint set up with a key of yours can be tested",
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

// discordSigner signs with an Ed25519 private key, whose public half the
// source holds. Discord keeps the private key of an application's public
// key: only an endpoint set up with the public half of a pair of one's own
// can be sent requests signed this way.
func discordSigner(o Options) (*Signer, error) {
	k, err := discordPrivateKey(o.Secrets[0])
	if err != nil {
		return nil, err
	}
	s, _ := signs(func(r *Request, now time.Time) error {
		ts := unix(now)
		msg := append([]byte(ts), r.Body...)
		r.Header.Set(discordTSHeader, ts)
		r.Header.Set(discordSigHeader, hex.EncodeToString(ed25519.Sign(k, msg)))
		return nil
	})
	s.public = hex.EncodeToString(k.Public().(ed25519.PublicKey))
	return s, nil
}

// discordPrivateKey parses an Ed25519 private key: a PKCS#8 PEM block, as
// openssl genpkey -algorithm ed25519 writes it, or 128 hex digits (seed
// and public key, as Go and NaCl hold it). 64 hex digits are refused: that
// is the form of the public key, which cannot sign.
func discordPrivateKey(s string) (ed25519.PrivateKey, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "-----BEGIN") {
		block, _ := pem.Decode([]byte(s))
		if block == nil || block.Type != "PRIVATE KEY" {
			return nil, errors.New("want a PEM \"PRIVATE KEY\" block (PKCS#8), as openssl genpkey -algorithm ed25519 writes")
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, errors.New("the PEM block is not a PKCS#8 private key")
		}
		ed, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, errors.New("the PEM block is not an Ed25519 private key, which Discord signs with")
		}
		return ed, nil
	}
	switch len(s) {
	case 2 * ed25519.PublicKeySize:
		return nil, errors.New("64 hex digits is an application's public key, which verifies but cannot sign: sign with the private key of its pair (PKCS#8 PEM, or 128 hex digits)")
	case 2 * ed25519.PrivateKeySize:
		k := make([]byte, ed25519.PrivateKeySize)
		if !decodeHex(k, s, false) {
			return nil, errors.New("not hex")
		}
		priv := ed25519.NewKeyFromSeed(k[:ed25519.SeedSize])
		if !bytes.Equal(priv, k) {
			return nil, errors.New("the last 32 bytes are not the public key of the first 32")
		}
		return priv, nil
	}
	return nil, errors.New("want an Ed25519 private key: PKCS#8 PEM, or 128 hex digits")
}
