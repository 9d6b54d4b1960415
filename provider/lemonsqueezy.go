package provider

import "crypto/sha256"

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
	Name:      "lemonsqueezy",
	Signature: "`X-Signature` (hex), no timestamp",
	Docs:      "https://docs.lemonsqueezy.com/help/webhooks/signing-requests",
	EventID:   "body-sha256",
	EventType: "header:X-Event-Name",
	Redact:    []string{"X-Signature"},
	signer:    bodySigner("X-Signature", "", sha256.New, hexMAC),
	verifier: func(o Options) (Verifier, error) {
		// Lemon Squeezy's examples compare the lower-case hex strings.
		return &hmacVerifier{
			scheme: "lemonsqueezy", header: "X-Signature", size: sha256.Size,
			lowerHex: true, keys: rawKeys(sha256.New, o.Secrets),
		}, nil
	},
}
