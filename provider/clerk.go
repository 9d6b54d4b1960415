package provider

import "time"

// clerkProvider: Clerk delivers its webhooks through Svix, signed as
// Standard Webhooks under the svix-* header names with a whsec_ signing
// secret (clerk.com/docs/reference/backend/verify-webhook; @clerk/backend's
// verifyWebhook hands the svix-* headers to the standardwebhooks library).
// It is the standard scheme with Clerk's defaults, checked by standard's own
// verifier: the signed message id is the event id (webhook-id before
// svix-id, as standard reads them, so the id is always the one the signature
// covers), the body's type ("user.created") is the type, and a timestamp is
// accepted 5 minutes either side of the clock, the library's default.
var clerkProvider = Provider{
	Name:      "clerk",
	Signature: "`svix-signature` (the `standard` check, `whsec_` key), timestamp within 5 min either way",
	Docs:      "https://clerk.com/docs/guides/development/webhooks/syncing",
	EventID:   "header:webhook-id,header:svix-id",
	EventType: "json:type",
	// Order: the object's id and the event's timestamp (Unix milliseconds).
	OrderKey:     "json:data.id",
	OrderVersion: "json:timestamp",
	OrderDocs:    "https://clerk.com/docs/guides/development/webhooks/overview",
	Tolerance:    5 * time.Minute,
	Redact:       []string{standardHeaders[2], svixHeaders[2]},
	// Delivered by Svix.
	Timeout:     15 * time.Second,
	TimeoutNote: "Svix's, which delivers Clerk's webhooks",
	Retries:     svixRetries,
	Samples: []Sample{
		{Type: "user.created", File: "clerk/user.created.json", ID: "msg_2lBkWi9G4qtt8C0ytA8r7h4Y9fG", Resource: "user_29w83sxmDNGwOuEthce5gg56FcC", Key: "json:data.id", Version: "json:data.updated_at"},
	},
	signer:   standardSigner(&svixHeaders),
	headers:  svixHeader,
	verifier: func(o Options) (Verifier, error) { return standardProvider.verifier(o) },
	secret:   func(s string) error { return standardProvider.secret(s) },
}
