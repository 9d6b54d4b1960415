package provider

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"fmt"
	"net/http"
	"time"
)

const (
	squareHeader = "X-Square-Hmacsha256-Signature"
	// squareSHA1Header is the signature of Square's first scheme (HMAC-SHA1
	// of the same string), still sent beside the current one: never
	// checked, never stored.
	squareSHA1Header = "X-Square-Signature"
)

// squareProvider: x-square-hmacsha256-signature is base64 of HMAC-SHA256,
// keyed with the subscription's signature key, over the notification URL
// exactly as the subscription has it followed by the body, as Square's
// WebhooksHelper (square-nodejs-sdk src/utilities/webhooksHelper.ts,
// isValidWebhookEventSignature) computes it. Square signs no timestamp.
// The event id and type are the body's event_id and type.
var squareProvider = Provider{
	Name:      "square",
	Signature: "`x-square-hmacsha256-signature` (base64 HMAC-SHA256 of the notification URL + body); no timestamp signed; `public_url`",
	Docs:      "https://developer.squareup.com/docs/webhooks/step3validate",
	EventID:   "json:event_id",
	EventType: "json:type",
	// Order: the object's id and the event's created_at (RFC 3339).
	OrderKey:     "json:data.id",
	OrderVersion: "json:created_at",
	OrderDocs:    "https://developer.squareup.com/docs/webhooks/overview",
	Redact:       []string{squareHeader, squareSHA1Header},
	SignsURL:     true,
	// A 2xx within 10 seconds; unsuccessful deliveries are retried for up
	// to 24 hours (Troubleshoot webhooks), intervals not published.
	Timeout: 10 * time.Second,
	Retries: Retries{
		Delays: backoff(10, time.Minute, 24*time.Hour),
		Note:   "for up to 24 hours, intervals not published: 10 doubling delays over 24 hours",
	},
	Samples: []Sample{
		{Type: "payment.updated", File: "square/payment.updated.json", ID: "6a8f5f28-54a1-4eb0-a98a-3111513fd4fc", Resource: "KkAkhdMsgzn59SM8A89WgKwekxLZY", Key: "json:data.id", Version: "json:data.object.payment.updated_at"},
	},
	signer: squareSigner,
	verifier: func(o Options) (Verifier, error) {
		return &squareVerifier{keys: rawKeys(sha256.New, o.Secrets)}, nil
	},
}

type squareVerifier struct {
	keys []*macKey
}

func (v *squareVerifier) Verify(http.Header, []byte, time.Time) error { return errNoURL("square") }

func (v *squareVerifier) VerifyRequest(r *Request, _ time.Time) error {
	sig := r.Header.Get(squareHeader)
	if sig == "" {
		return fmt.Errorf("square: %s: %w", squareHeader, ErrMissing)
	}
	var want [sha256.Size]byte
	if !decodeBase64(want[:], sig) {
		return fmt.Errorf("square: %s: not base64 of a 32-byte digest: %w", squareHeader, ErrMalformed)
	}
	var mac [maxMAC]byte
	for _, k := range v.keys {
		if hmac.Equal(k.sum(mac[:], r.Body, r.URL), want[:]) {
			return nil
		}
	}
	return fmt.Errorf("square: %s: %w", squareHeader, ErrMismatch)
}

// squareSigner signs the notification URL and the body, and sends the
// first scheme's SHA-1 signature of the same beside it, as Square does.
func squareSigner(o Options) (*Signer, error) {
	key := []byte(o.Secrets[0])
	return signs(func(r *Request, _ time.Time) error {
		r.Header.Set(squareHeader, base64MAC(hmacOf(sha256.New, key, []byte(r.URL), r.Body)))
		r.Header.Set(squareSHA1Header, base64MAC(hmacOf(sha1.New, key, []byte(r.URL), r.Body)))
		return nil
	})
}
