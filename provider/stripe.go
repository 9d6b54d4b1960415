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
	// The object an event is about, and the event's creation time in
	// Unix seconds (docs.stripe.com/api/events/object: data.object,
	// created). One-second resolution: events of one object created in
	// the same second keep their receipt order.
	OrderKey:     "json:data.object.id",
	OrderVersion: "json:created",
	Tolerance:    5 * time.Minute,
	Redact:       []string{stripeHeader},
	// Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>][,v0=...] over
	// "<t>.<body>", keyed with the whole whsec_ string, undecoded; hex
	// digits of either case are accepted, as stripe-go does.
	// Stripe publishes no answer timeout; it asks for a 2xx before any
	// slow work. Measurements reported elsewhere range from 20 to 30 s: the
	// shorter is used.
	Timeout:     20 * time.Second,
	TimeoutNote: "not published by Stripe; reported as 20 to 30 s, the shorter used",
	Retries: Retries{
		Delays: backoff(6, time.Hour, 0),
		Note:   "up to 3 days with exponential backoff in live mode (intervals not published): doubling from 1 hour",
	},
	Samples: []Sample{
		{Type: "payment_intent.succeeded", File: "stripe/payment_intent.succeeded.json", ID: "evt_3MtwBwLkdIwHu7ix0snN0B15", Resource: "pi_3MtwBwLkdIwHu7ix28a3tqPa", Key: "json:data.object.id", Version: "json:created"},
		{Type: "charge.refunded", File: "stripe/charge.refunded.json", ID: "evt_3MtwBwLkdIwHu7ix1Zx9vQ2P", Resource: "ch_3MtwBwLkdIwHu7ix28a3tqPa", Key: "json:data.object.id", Version: "json:created"},
	},
	signer:   stamped{header: stripeHeader, sep: ",", tsKey: "t", sigKey: "v1", join: "."}.signer,
	verifier: stamped{scheme: "stripe", header: stripeHeader, sep: ",", tsKey: "t", sigKey: "v1", join: "."}.verifier,
}
