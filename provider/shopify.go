package provider

import (
	"crypto/sha256"
	"net/http"
	"time"
)

// Header names of Shopify's webhooks, and of its Events deliveries, which
// send the same values without the X- (and, for now, the X- ones too).
const (
	shopifyHMAC       = "X-Shopify-Hmac-Sha256"
	shopifyEventsHMAC = "Shopify-Hmac-Sha256"
)

// shopifyProvider: the HMAC header is base64 of HMAC-SHA256(secret, body);
// no timestamp is signed. As Shopify's own library (shopify-app-js,
// lib/webhooks/validate.ts) does, a request carrying Shopify-Hmac-Sha256
// is an Events delivery and is checked with that header, else with
// X-Shopify-Hmac-Sha256. An Events delivery has no webhook id: its id is
// Shopify-Event-Id, and its topic Shopify-Topic.
var shopifyProvider = Provider{
	Name:      "shopify",
	Signature: "`X-Shopify-Hmac-Sha256` (base64; Events deliveries: `Shopify-Hmac-Sha256`)",
	Docs:      "https://shopify.dev/docs/apps/build/webhooks/subscribe/https#step-5-verify-the-webhook",
	EventID:   "header:X-Shopify-Webhook-Id,header:Shopify-Event-Id",
	EventType: "header:X-Shopify-Topic,header:Shopify-Topic",
	// The resource's global id (unique across resource types, unlike its
	// numeric id), and when Shopify triggered the webhook, else the
	// resource's updated_at (shopify.dev, webhooks best practices:
	// "X-Shopify-Triggered-At" to order events).
	OrderKey:     "json:admin_graphql_api_id,json:id",
	OrderVersion: "header:X-Shopify-Triggered-At,json:updated_at",
	Redact:       []string{shopifyHMAC, shopifyEventsHMAC},
	// 1 second to connect and 5 to answer; 8 retries over 4 hours with
	// exponential backoff (shopify.dev, HTTPS delivery; the 2024-09 changelog).
	Timeout: 5 * time.Second,
	Retries: Retries{
		Delays: backoff(8, time.Minute, 4*time.Hour),
		Note:   "8 times over 4 hours with exponential backoff: doubling from 1 minute, capped to fit",
	},
	Samples: []Sample{
		{Type: "orders/create", File: "shopify/orders-create.json", ID: "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", Resource: "820982911946154508", Key: "json:id", Version: "json:updated_at"},
		{Type: "orders/updated", File: "shopify/orders-updated.json", ID: "7e0a6c1d-43f2-4b9e-9d1a-2c3b4d5e6f70", Resource: "820982911946154508", Key: "json:id", Version: "json:updated_at"},
	},
	signer:  bodySigner(shopifyHMAC, "", sha256.New, base64MAC),
	headers: shopifyHeaders,
	verifier: func(o Options) (Verifier, error) {
		return &hmacVerifier{
			scheme: "shopify", header: shopifyHMAC, preferred: shopifyEventsHMAC,
			size: sha256.Size, base64: true, keys: rawKeys(sha256.New, o.Secrets),
		}, nil
	},
}

// shopifyHeaders: the shop and API version every Shopify webhook names.
func shopifyHeaders(h http.Header, _ Event) {
	h.Set("X-Shopify-Shop-Domain", "example.myshopify.com")
	h.Set("X-Shopify-Api-Version", "2025-07")
}
