package provider

import (
	"time"
)

const calendlyHeader = "Calendly-Webhook-Signature"

// calendlyProvider: Calendly-Webhook-Signature is t=<unix>,v1=<hex>, v1
// the lower-case hex of HMAC-SHA256 over "<t>.<body>" keyed with the
// subscription's signing key (developer.calendly.com/api-docs/overview/
// webhooks/webhook-signatures). The body's "event" ("invitee.created") is
// the type.
//
// Calendly sends no event or delivery id: the id is the body's hash. A
// retry resends the same body (only t and the signature are new), and two
// events differ in their body (the event name, the invitee, created_at).
var calendlyProvider = Provider{
	Name:      "calendly",
	Signature: "`Calendly-Webhook-Signature` `t=,v1=` (hex of `t.body`, every `v1` tried), `t` at most 3 min old",
	Docs:      "https://developer.calendly.com/api-docs/overview/webhooks/webhook-signatures",
	EventID:   "body-sha256",
	EventType: "json:event",
	// Calendly's docs refuse a t more than 3 minutes old and check no
	// other direction; Calendly publishes no SDK.
	Tolerance: 3 * time.Minute,
	Redact:    []string{calendlyHeader},
	// One t, every v1 tried, hex digits in lower case as the docs' string
	// comparison needs.
	// A read timeout of 15 seconds, 10 to connect (Webhook timeouts);
	// retries not published.
	Timeout: 15 * time.Second,
	Retries: genericRetries,
	Samples: []Sample{
		{Type: "invitee.created", File: "calendly/invitee.created.json", ID: "BBBBBBBBBBBBBBBB", Resource: "GBGBDCAADAEDCRZ2", Key: "json:payload.event", Version: "json:payload.updated_at"},
	},
	signer:   stamped{header: calendlyHeader, sep: ",", tsKey: "t", sigKey: "v1", join: "."}.signer,
	verifier: stamped{scheme: "calendly", header: calendlyHeader, sep: ",", tsKey: "t", sigKey: "v1", join: ".", lowerHex: true}.verifier,
}
