package provider

import (
	"strings"
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
	// The object an event is about, or a thin event's related object; an
	// event's created is in seconds, so two changes within one second
	// tie, and keep the order hookbox received them in.
	OrderKey:     "json:data.object.id,json:related_object.id",
	OrderVersion: "json:created",
	OrderDocs:    "https://docs.stripe.com/webhooks#event-ordering",
	Refetch:      stripeRefetch,
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

// stripeRefetch retrieves the event's object: GET /v1/<objects>/<id>, the
// path the API reference gives each object named in data.object.object,
// or a thin event's related_object.url. The object is rendered in the
// event's api_version (Stripe-Version), so its shape is the webhook's,
// and a connected account's event is fetched from that account
// (Stripe-Account).
var stripeRefetch = &Refetch{
	Base:     "https://api.stripe.com",
	Docs:     "https://docs.stripe.com/api",
	What:     "`GET /v1/<objects>/<id>` of `data.object` (or a thin event's `related_object.url`)",
	Rate:     "100/s",
	RateNote: "live mode; 25/s with a test key, `sk_test_` or `rk_test_`",
	RateFor: func(key string) string {
		if strings.HasPrefix(key, "sk_test_") || strings.HasPrefix(key, "rk_test_") {
			return "25/s"
		}
		return "100/s"
	},
	Request: stripeRequest,
}

// stripeObjects maps an API object's name (its "object" field) to its
// retrieve path under /v1, for the objects the API reference documents a
// retrieve of by id alone. An object missing here has no such endpoint
// (a balance, a discount) or one that needs its parent's id (a person):
// its events cannot be refetched.
var stripeObjects = map[string]string{
	"account":                       "accounts",
	"application_fee":               "application_fees",
	"balance_transaction":           "balance_transactions",
	"billing.alert":                 "billing/alerts",
	"billing.meter":                 "billing/meters",
	"billing_portal.configuration":  "billing_portal/configurations",
	"charge":                        "charges",
	"checkout.session":              "checkout/sessions",
	"climate.order":                 "climate/orders",
	"coupon":                        "coupons",
	"credit_note":                   "credit_notes",
	"customer":                      "customers",
	"dispute":                       "disputes",
	"file":                          "files",
	"file_link":                     "file_links",
	"identity.verification_session": "identity/verification_sessions",
	"invoice":                       "invoices",
	"invoiceitem":                   "invoiceitems",
	"issuing.authorization":         "issuing/authorizations",
	"issuing.card":                  "issuing/cards",
	"issuing.cardholder":            "issuing/cardholders",
	"issuing.dispute":               "issuing/disputes",
	"issuing.transaction":           "issuing/transactions",
	"mandate":                       "mandates",
	"payment_intent":                "payment_intents",
	"payment_link":                  "payment_links",
	"payment_method":                "payment_methods",
	"payout":                        "payouts",
	"plan":                          "plans",
	"price":                         "prices",
	"product":                       "products",
	"promotion_code":                "promotion_codes",
	"quote":                         "quotes",
	"radar.early_fraud_warning":     "radar/early_fraud_warnings",
	"refund":                        "refunds",
	"reporting.report_run":          "reporting/report_runs",
	"review":                        "reviews",
	"setup_intent":                  "setup_intents",
	"subscription":                  "subscriptions",
	"subscription_schedule":         "subscription_schedules",
	"tax_rate":                      "tax_rates",
	"terminal.reader":               "terminal/readers",
	"test_helpers.test_clock":       "test_helpers/test_clocks",
	"topup":                         "topups",
	"transfer":                      "transfers",
}

func stripeRequest(e FetchEvent) (FetchRequest, error) {
	doc, err := jsonObject(e.Body)
	if err != nil {
		return FetchRequest{}, err
	}
	r := FetchRequest{Header: map[string]string{}}
	if v := field(doc, "api_version"); stripeVersion(v) {
		r.Header["Stripe-Version"] = v
	}
	if acct := field(doc, "account"); strings.HasPrefix(acct, "acct_") && validStripeID(acct) {
		r.Header["Stripe-Account"] = acct
	}
	if u := field(doc, "related_object.url"); u != "" {
		// A thin event names its object's own API path.
		if r.Path, err = apiPath(u); err != nil {
			return FetchRequest{}, err
		}
		if !strings.HasPrefix(u, "/v1/") && !strings.HasPrefix(u, "/v2/") {
			return FetchRequest{}, noResource("stripe: related_object.url %q is not an API path", u)
		}
		return r, nil
	}
	object, id := field(doc, "data.object.object"), field(doc, "data.object.id")
	if object == "" || id == "" {
		return FetchRequest{}, noResource("stripe: no data.object with an object and an id")
	}
	path, ok := stripeObjects[object]
	if !ok {
		return FetchRequest{}, noResource("stripe: objects %q have no retrieve endpoint hookbox knows", object)
	}
	if !validStripeID(id) {
		return FetchRequest{}, noResource("stripe: data.object.id %q is not a Stripe id", id)
	}
	r.Path = "/v1/" + path + "/" + id
	return r, nil
}

// validStripeID: Stripe's ids are letters, digits and underscores.
func validStripeID(id string) bool {
	if id == "" || len(id) > 255 {
		return false
	}
	for _, c := range id {
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// stripeVersion: an API version is a date, maybe followed by a release
// name ("2024-06-20", "2025-03-31.basil").
func stripeVersion(v string) bool {
	if len(v) < 10 || len(v) > 40 {
		return false
	}
	for i, c := range v {
		switch {
		case i == 4 || i == 7:
			if c != '-' {
				return false
			}
		case i < 10:
			if c < '0' || c > '9' {
				return false
			}
		case i == 10:
			if c != '.' {
				return false
			}
		default:
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
				return false
			}
		}
	}
	return true
}
