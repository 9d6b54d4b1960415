package provider

import "time"

// resendProvider: Resend delivers its webhooks through Svix, signed as
// Standard Webhooks under the svix-* header names with a whsec_ signing
// secret (resend.com/docs/webhooks/verify-webhooks-requests; resend-node's
// webhooks.verify uses the standardwebhooks library). It is the standard
// scheme with Resend's defaults, checked by standard's own verifier: the
// signed message id is the event id (webhook-id before svix-id, as standard
// reads them, so the id is always the one the signature covers), the body's
// type ("email.delivered") is the type, and a timestamp is accepted 5
// minutes either side of the clock, the library's default.
var resendProvider = Provider{
	Name:      "resend",
	Signature: "`svix-signature` (the `standard` check, `whsec_` key), timestamp within 5 min either way",
	Docs:      "https://resend.com/docs/webhooks/verify-webhooks-requests",
	EventID:   "header:webhook-id,header:svix-id",
	EventType: "json:type",
	// Order: the email's id (a contact's or domain's for their events) and created_at.
	OrderKey:     "json:data.email_id,json:data.id",
	OrderVersion: "json:created_at",
	OrderDocs:    "https://resend.com/docs/dashboard/webhooks/event-types",
	Tolerance:    5 * time.Minute,
	Redact:       []string{standardHeaders[2], svixHeaders[2]},
	// Delivered by Svix.
	Timeout:     15 * time.Second,
	TimeoutNote: "Svix's, which delivers Resend's webhooks",
	Retries:     svixRetries,
	Samples: []Sample{
		{Type: "email.delivered", File: "resend/email.delivered.json", ID: "msg_2mKq8e1XbZ4vTnPy3QsR7wLh9aC", Resource: "4ef9a417-02e9-4d39-ad75-9611e0fcc33c", Key: "json:data.email_id", Version: "json:created_at"},
	},
	signer:   standardSigner(&svixHeaders),
	headers:  svixHeader,
	verifier: func(o Options) (Verifier, error) { return standardProvider.verifier(o) },
	secret:   func(s string) error { return standardProvider.secret(s) },
}
