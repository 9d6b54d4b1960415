package provider

import "crypto/sha1"

// vercelProvider is Vercel's webhooks, account webhooks and integration
// webhooks alike (vercel.com/docs/webhooks/webhooks-api#securing-webhooks).
//
// x-vercel-signature is the lower-case hex of HMAC-SHA1 over the raw body,
// keyed with the webhook's secret (shown once when an account webhook is
// created) or, for an integration, its Client Secret. Vercel's own example
// compares the hex strings, so upper-case digits are refused here too.
// Nothing else is signed and there is no timestamp. Every listed secret is
// tried, for a rotation.
//
// The body's "id" is, in Vercel's words, the ID of the webhook delivery,
// and its "type" the event type (deployment.created, project.removed, …).
var vercelProvider = Provider{
	Name:      "vercel",
	Signature: "`x-vercel-signature` (hex HMAC-SHA1 of the body; no timestamp)",
	Docs:      "https://vercel.com/docs/webhooks/webhooks-api#securing-webhooks",
	EventID:   "json:id",
	EventType: "json:type",
	// Order: the deployment's id, else the project's, and createdAt (Unix milliseconds).
	OrderKey:     "json:payload.deployment.id,json:payload.project.id",
	OrderVersion: "json:createdAt",
	OrderDocs:    "https://vercel.com/docs/webhooks/webhooks-api",
	Redact:       []string{"X-Vercel-Signature"},
	TimeoutNote:  "not published",
	Retries:      genericRetries,
	Samples: []Sample{
		{Type: "deployment.created", File: "vercel/deployment.created.json", ID: "uHTUJQ8vJeF8ztMuRtvDXnng", Resource: "dpl_2euZBFqxYdDMDG1jTrHFnNZ2eUVa", Key: "json:payload.deployment.id", Version: "json:createdAt"},
	},
	signer: bodySigner("X-Vercel-Signature", "", sha1.New, hexMAC),
	verifier: func(o Options) (Verifier, error) {
		return &hmacVerifier{
			scheme: "vercel", header: "X-Vercel-Signature",
			size: sha1.Size, lowerHex: true, keys: rawKeys(sha1.New, o.Secrets),
		}, nil
	},
}
