package provider

import (
	"time"
)

const paddleHeader = "Paddle-Signature"

// paddleProvider is Paddle Billing (developer.paddle.com/webhooks/
// signature-verification): the event id and type are the JSON body's own
// event_id and event_type. notification_id is not the id: Paddle sends one
// event to each notification destination under a new notification id, and
// the event is what a target must see once.
var paddleProvider = Provider{
	Name:      "paddle",
	Signature: "`Paddle-Signature` `ts=;h1=` (hex of `ts:body`, every `h1` tried), `ts` at most 5 s old",
	Docs:      "https://developer.paddle.com/webhooks/signature-verification",
	EventID:   "json:event_id",
	EventType: "json:event_type",
	// Order: the entity's id, and occurred_at, which Paddle's docs say to order by.
	OrderKey:     "json:data.id",
	OrderVersion: "json:occurred_at",
	OrderDocs:    "https://developer.paddle.com/webhooks/about/how-webhooks-work",
	// Paddle's SDKs (paddle-node-sdk WebhooksValidator, paddle-python-sdk
	// Verifier) accept a ts at most 5 seconds old, and Paddle's docs ask
	// manual checks to do the same.
	Tolerance: 5 * time.Second,
	Redact:    []string{paddleHeader},
	// Paddle-Signature: ts=<unix>;h1=<hex>[;h1=<hex>] over "<ts>:<body>",
	// keyed with the whole pdl_ntfset_... secret key as Paddle shows it.
	// Every h1 is tried ("signatures contain at least one h1", as
	// paddle-python-sdk reads them) and other keys are skipped, as
	// paddle-node-sdk does; only a ts older than the tolerance is refused
	// (paddle-go-sdk checks no time at all); hex digits are lower case
	// only, since the Node and Python SDKs compare the hex strings.
	// A 200 within five seconds; live accounts retry up to 60 times over 3
	// days with exponential backoff (Handle webhook delivery).
	Timeout: 5 * time.Second,
	Retries: Retries{
		Delays: backoff(60, time.Minute, 72*time.Hour),
		Note:   "live: up to 60 times over 3 days with exponential backoff: doubling from 1 minute, capped to fit",
	},
	Samples: []Sample{
		{Type: "transaction.completed", File: "paddle/transaction.completed.json", ID: "evt_01hv8x2kz6t4v3m1n7p9q2r5s8", Resource: "txn_01hv8wptq8987qeep44cyrewp9", Key: "json:data.id", Version: "json:occurred_at"},
	},
	signer:   stamped{header: paddleHeader, sep: ";", tsKey: "ts", sigKey: "h1", join: ":"}.signer,
	verifier: stamped{scheme: "paddle", header: paddleHeader, sep: ";", tsKey: "ts", sigKey: "h1", join: ":", lowerHex: true}.verifier,
}
