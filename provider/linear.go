package provider

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

const linearHeader = "Linear-Signature"

// linearProvider: Linear-Signature is the lower-case hex of
// HMAC-SHA256(secret, body), and the JSON body's webhookTimestamp (Unix
// milliseconds) says when the delivery was sent (linear.app/developers/
// webhooks, @linear/sdk LinearWebhookClient.verify). Linear-Delivery is
// the payload's id; the body's type ("Issue", "Comment") is the type, the
// same value as the unsigned Linear-Event header.
var linearProvider = Provider{
	Name:      "linear",
	Signature: "`Linear-Signature` (hex), the signed body's `webhookTimestamp` within 1 min either way",
	Docs:      "https://linear.app/developers/webhooks",
	EventID:   "header:Linear-Delivery",
	EventType: "json:type",
	// Order: the entity's id (a UUID) and createdAt, when the action took place.
	OrderKey:     "json:data.id",
	OrderVersion: "json:createdAt",
	OrderDocs:    "https://linear.app/developers/webhooks",
	// The SDK refuses a webhookTimestamp more than a minute from its clock,
	// in either direction.
	Tolerance: time.Minute,
	Redact:    []string{linearHeader},
	// A 200 within 5 seconds, else 3 retries: after 1 minute, 1 hour and
	// 6 hours.
	Timeout: 5 * time.Second,
	Retries: Retries{
		Delays: []time.Duration{time.Minute, time.Hour, 6 * time.Hour},
		Note:   "3 retries: after 1 minute, 1 hour and 6 hours",
	},
	Samples: []Sample{
		{Type: "Issue", File: "linear/Issue.json", ID: "4f7a2b1c-9d8e-4f6a-b5c4-d3e2f1a0b9c8", Resource: "0f0e4e85-7e9a-4f1b-9c2d-3e4f5a6b7c8d", Key: "json:data.id", Version: "json:data.updatedAt"},
	},
	signer:  linearSigner,
	headers: linearHeaders,
	verifier: func(o Options) (Verifier, error) {
		return &linearVerifier{
			sig: hmacVerifier{
				scheme: "linear", header: linearHeader, size: sha256.Size,
				lowerHex: true, keys: rawKeys(sha256.New, o.Secrets),
			},
			tol: o.Tolerance,
		}, nil
	},
}

// linearVerifier checks the signature, then the signed webhookTimestamp.
//
// Two choices are stricter than the SDK's. The SDK skips the time check
// when the body has no webhookTimestamp; Linear puts one in every
// delivery, and without it a captured request could be replayed at any
// time, so here its absence is refused. Recent SDKs also prefer a
// Linear-Timestamp header to the body's field when one is sent; that
// header is not signed (anyone resending a request can set it), so only
// the body's field counts.
//
// The body is decoded only once the signature matched, so an unsigned
// request costs no JSON parse.
type linearVerifier struct {
	sig hmacVerifier
	tol time.Duration
}

func (v *linearVerifier) Verify(h http.Header, body []byte, now time.Time) error {
	if err := v.sig.Verify(h, body, now); err != nil {
		return err
	}
	ms, err := linearTimestamp(body)
	if err != nil {
		return fmt.Errorf("linear: webhookTimestamp: %w", err)
	}
	if d := now.Sub(time.UnixMilli(ms)); d > v.tol || d < -v.tol {
		return fmt.Errorf("linear: webhookTimestamp: %w", ErrTimestamp)
	}
	return nil
}

// linearTimestamp returns the top-level webhookTimestamp of a JSON body, a
// whole number of milliseconds. Keys match exactly (encoding/json would
// also take "WebhookTimestamp" into a struct field), and a repeated key's
// last value wins, as in the JavaScript that reads it in the SDK.
func linearTimestamp(body []byte) (int64, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		return 0, fmt.Errorf("the signed body is not a JSON object: %w", ErrMalformed)
	}
	raw, ok := doc["webhookTimestamp"]
	if !ok {
		return 0, fmt.Errorf("missing from the signed body: %w", ErrMissing)
	}
	ms, ok := parseUnix(string(bytes.TrimSpace(raw)))
	if !ok {
		return 0, fmt.Errorf("not a whole number of milliseconds: %w", ErrMalformed)
	}
	return ms, nil
}

// linearSigner sets the body's webhookTimestamp to the time of sending, in
// milliseconds, as Linear does on every delivery, then signs the body.
func linearSigner(o Options) (*Signer, error) {
	key := []byte(o.Secrets[0])
	return signs(func(r *Request, now time.Time) error {
		body, err := setMember(r.Body, "webhookTimestamp", []byte(unixMilli(now)))
		if err != nil {
			return fmt.Errorf("webhookTimestamp: %w", err)
		}
		r.Body = body
		r.Header.Set(linearHeader, hexMAC(hmacOf(sha256.New, key, r.Body)))
		return nil
	})
}

// linearHeaders: Linear-Event repeats the body's type.
func linearHeaders(h http.Header, e Event) {
	if e.Type != "" {
		h.Set("Linear-Event", e.Type)
	}
}
