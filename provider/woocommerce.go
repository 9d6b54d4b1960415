package provider

import (
	"crypto/sha256"
	"net/http"
	"strings"
	"time"
)

// woocommerceProvider: X-WC-Webhook-Signature is the base64 of
// HMAC-SHA256(secret, body), the body being the JSON WooCommerce sends
// (WC_Webhook::generate_signature in includes/class-wc-webhook.php), keyed
// with the secret as it was typed (WooCommerce decodes the HTML entities
// WordPress stores it with). No timestamp is signed, and WooCommerce does
// not retry a failed delivery.
//
// The event id is the body's hash, not X-WC-Webhook-Delivery-ID: that
// header is wp_hash(webhook id . the current second) (get_new_delivery_id),
// so two deliveries of one webhook in the same second, an ordinary burst
// from Action Scheduler, share it, and the second would be dropped as a
// duplicate. The body is the resource as the REST API shows it, so two
// events differ in their bodies unless nothing changed, and a copy of a
// request is a duplicate whatever headers it is given. The topic
// ("order.updated") is the type.
//
// The ping WooCommerce sends when a webhook is saved (webhook_id=N, form
// encoded) is unsigned: it is refused with 401. WooCommerce shows that
// answer as a warning, keeps the webhook and delivers its signed events.
var woocommerceProvider = Provider{
	Name:      "woocommerce",
	Signature: "`X-WC-Webhook-Signature` (base64), no timestamp",
	Docs:      "https://github.com/woocommerce/woocommerce/blob/trunk/plugins/woocommerce/includes/class-wc-webhook.php",
	EventID:   "body-sha256",
	EventType: "header:X-WC-Webhook-Topic",
	Redact:    []string{"X-Wc-Webhook-Signature"},
	// WC_Webhook::deliver waits a minute (MINUTE_IN_SECONDS), and a failed
	// delivery is not sent again.
	Timeout: time.Minute,
	Retries: Retries{Note: "none: a failed delivery is not sent again"},
	Samples: []Sample{
		{Type: "order.updated", File: "woocommerce/order.updated.json", ID: "d1f0e5c4b3a2", Resource: "72791", Key: "json:id", Version: "json:date_modified_gmt"},
	},
	signer:  bodySigner("X-Wc-Webhook-Signature", "", sha256.New, base64MAC),
	headers: woocommerceHeaders,
	verifier: func(o Options) (Verifier, error) {
		return &hmacVerifier{
			scheme: "woocommerce", header: "X-Wc-Webhook-Signature",
			size: sha256.Size, base64: true, keys: rawKeys(sha256.New, o.Secrets),
		}, nil
	},
}

// woocommerceHeaders: the topic's resource and event as WooCommerce sends
// them beside it ("order.updated": order, updated).
func woocommerceHeaders(h http.Header, e Event) {
	if res, ev, ok := strings.Cut(e.Type, "."); ok {
		h.Set("X-Wc-Webhook-Resource", res)
		h.Set("X-Wc-Webhook-Event", ev)
	}
	h.Set("X-Wc-Webhook-Source", "https://shop.example.com/")
}
