package provider

import (
	"crypto/sha256"
	"time"
)

// lemonsqueezyProvider: X-Signature is the lower-case hex of
// HMAC-SHA256(signing secret, body) (docs.lemonsqueezy.com/help/webhooks/
// signing-requests); no timestamp is signed. X-Event-Name
// ("order_created") is the type, the same value as the body's
// meta.event_name.
//
// Lemon Squeezy sends no event or delivery id, and data.id is the
// resource's (every subscription_updated of one subscription shares it):
// the id is the body's hash. A retry (up to three, about 5 s, 25 s and
// 125 s later) resends the same payload, and two events differ in their
// body (meta.event_name, the resource's updated_at). A copy sent under
// another X-Event-Name is a duplicate too.
var lemonsqueezyProvider = Provider{
	Name:        "lemonsqueezy",
	Signature:   "`X-Signature` (hex), no timestamp",
	Docs:        "https://docs.lemonsqueezy.com/help/webhooks/signing-requests",
	EventID:     "body-sha256",
	EventType:   "header:X-Event-Name",
	Redact:      []string{"X-Signature"},
	TimeoutNote: "not published",
	Retries: Retries{
		Delays: []time.Duration{5 * time.Second, 25 * time.Second, 125 * time.Second},
		Note:   "3 retries with exponential backoff: after 5, 25 and 125 seconds",
	},
	Samples: []Sample{
		{Type: "order_created", File: "lemonsqueezy/order_created.json", ID: "104e18a2-d755-4d4b-80c4-a6c1dcbe1c10", Resource: "1829304", Key: "json:data.id", Version: "json:data.attributes.updated_at"},
	},
	signer: bodySigner("X-Signature", "", sha256.New, hexMAC),
	verifier: func(o Options) (Verifier, error) {
		// Lemon Squeezy's examples compare the lower-case hex strings.
		return &hmacVerifier{
			scheme: "lemonsqueezy", header: "X-Signature", size: sha256.Size,
			lowerHex: true, keys: rawKeys(sha256.New, o.Secrets),
		}, nil
	},
}
