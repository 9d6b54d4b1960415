package provider

import "crypto/sha256"

// shopifyProvider: X-Shopify-Hmac-Sha256 is base64 of
// HMAC-SHA256(secret, body); no timestamp is signed.
var shopifyProvider = Provider{
	Name:      "shopify",
	Signature: "`X-Shopify-Hmac-Sha256` (base64)",
	Docs:      "https://shopify.dev/docs/apps/build/webhooks/subscribe/https#step-5-verify-the-webhook",
	EventID:   "header:X-Shopify-Webhook-Id",
	EventType: "header:X-Shopify-Topic",
	Redact:    []string{"X-Shopify-Hmac-Sha256"},
	verifier: func(o Options) (Verifier, error) {
		return &hmacVerifier{
			scheme: "shopify", header: "X-Shopify-Hmac-Sha256",
			size: sha256.Size, base64: true, keys: rawKeys(sha256.New, o.Secrets),
		}, nil
	},
}
