package provider

import (
	"time"
)

const stripeHeader = "Stripe-Signature"

// stripeProvider: the event id and type are the JSON body's own; the
// signature covers a timestamp, accepted 5 minutes old as Stripe's SDKs do.
var stripeProvider = Provider{
	Name:      "stripe",
	Signature: "`Stripe-Signature` (`t=`, every `v1=` tried, whole `whsec_` string is the key)",
	Docs:      "https://docs.stripe.com/webhooks#verify-events",
	EventID:   "json:id",
	EventType: "json:type",
	Tolerance: 5 * time.Minute,
	Redact:    []string{stripeHeader},
	// Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>][,v0=...] over
	// "<t>.<body>", keyed with the whole whsec_ string, undecoded; hex
	// digits of either case are accepted, as stripe-go does.
	signer:   stamped{header: stripeHeader, sep: ",", tsKey: "t", sigKey: "v1", join: "."}.signer,
	verifier: stamped{scheme: "stripe", header: stripeHeader, sep: ",", tsKey: "t", sigKey: "v1", join: "."}.verifier,
}
