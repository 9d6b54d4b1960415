package provider

import (
	"crypto/sha256"
	"net/http"
	"regexp"
	"strings"
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
	// The resource's global id (a product and an order may share a
	// numeric id), else its id; the time Shopify triggered the webhook,
	// else the resource's updated_at (the docs' advice for ordering).
	OrderKey:     "json:admin_graphql_api_id,json:id",
	OrderVersion: "header:X-Shopify-Triggered-At,json:updated_at",
	OrderDocs:    "https://shopify.dev/docs/apps/build/webhooks",
	Refetch:      shopifyRefetch,
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

// shopifyAPIVersion is the Admin API version fetched when the webhook
// does not name the one it was rendered in (X-Shopify-API-Version).
const shopifyAPIVersion = "2025-07"

// shopifyRefetch reads the resource from the REST Admin API of the shop
// that sent the webhook: GET /admin/api/<version>/<resources>/<id>.json,
// the resources named by the topic's first part, in the API version the
// webhook was rendered in, with the app's access token.
var shopifyRefetch = &Refetch{
	Docs:       "https://shopify.dev/docs/api/admin-rest",
	What:       "`GET /admin/api/<version>/<resources>/<id>.json` of the topic's resource, on the shop of `X-Shopify-Shop-Domain`",
	Rate:       "2/s",
	RateNote:   "the standard plan's REST Admin limit per app and shop; Advanced 4/s, Plus 20/s",
	AuthHeader: "X-Shopify-Access-Token",
	Request:    shopifyRequest,
}

// shopifyResources are the topics' resources the REST Admin API retrieves
// by id alone; fulfillments and refunds are read below their order.
var shopifyResources = map[string]bool{
	"orders": true, "products": true, "customers": true, "draft_orders": true,
	"collections": true, "inventory_items": true, "locations": true,
}

var (
	shopDomain     = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}\.myshopify\.com$`)
	shopifyVersion = regexp.MustCompile(`^(20[0-9]{2}-(0[1-9]|1[0-2])|unstable)$`)
)

func shopifyRequest(e FetchEvent) (FetchRequest, error) {
	var r FetchRequest
	if e.Base == "" {
		// The token is sent only to a shop's own myshopify.com host: the
		// header is not signed, and must not steer it elsewhere.
		shop := strings.ToLower(e.Header.Get("X-Shopify-Shop-Domain"))
		if !shopDomain.MatchString(shop) {
			return FetchRequest{}, noResource("shopify: X-Shopify-Shop-Domain %q is no myshopify.com shop (set refetch_base_url to the shop's https://<shop>.myshopify.com)", shop)
		}
		r.Base = "https://" + shop
	}
	version := shopifyAPIVersion
	if v := e.Header.Get("X-Shopify-Api-Version"); shopifyVersion.MatchString(v) {
		version = v
	}
	resource, _, _ := strings.Cut(e.Type, "/")
	doc, err := jsonObject(e.Body)
	if err != nil {
		return FetchRequest{}, err
	}
	id, ok := idSegment(field(doc, "id"))
	if !ok {
		return FetchRequest{}, noResource("shopify: the body has no id")
	}
	base := "/admin/api/" + version + "/"
	switch {
	case shopifyResources[resource]:
		r.Path = base + resource + "/" + id + ".json"
	case resource == "fulfillments" || resource == "refunds":
		order, ok := idSegment(field(doc, "order_id"))
		if !ok {
			return FetchRequest{}, noResource("shopify: %s without an order_id", resource)
		}
		r.Path = base + "orders/" + order + "/" + resource + "/" + id + ".json"
	default:
		return FetchRequest{}, noResource("shopify: topic %q has no resource hookbox can fetch", e.Type)
	}
	return r, nil
}
