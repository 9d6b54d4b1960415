package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

const (
	mpSigHeader       = "X-Signature"
	mpRequestIDHeader = "X-Request-Id"
)

// mercadopagoProvider: x-signature is "ts=<ts>,v1=<hex>", the hex of
// HMAC-SHA256, keyed with the application's secret signature, over the
// manifest "id:<data.id>;request-id:<x-request-id>;ts:<ts>;", data.id being
// the query parameter of the URL Mercado Pago called. As Mercado Pago's
// documentation (Your integrations > Webhooks, "Validate notification
// origin") says, a part whose value the notification lacks is left out of
// the manifest; as mercadopago/sdk-go (pkg/webhook/webhook.go) does, the
// values are trimmed, data.id is used in its own case (sdk-go 1.12
// lowercased it; the signature is over the original), only v1 is read and
// other versions ignored, and the hex is compared as sent (lower case).
//
// The body is not signed at all: the event id must be a signed value, or
// whoever holds one notification could send any body under a new id. The
// default is x-request-id, the only signed value that is one notification's
// own (data.id is the resource's, shared by its created and updated
// notifications). Mercado Pago does not document whether a retry keeps it;
// if retries arrive as new events, dedupe on the body's notification id
// instead (event_id = "json:id"), knowing it is not signed. The type is
// the body's action ("payment.updated"), else its type; neither is signed.
//
// Tolerance: the documentation leaves the window to the integrator ("you
// can ... establish a tolerance margin") and sdk-go checks none unless
// asked (then in both directions). Mercado Pago retries for 4 days and does
// not say whether a retry is signed anew, so a window shorter than that
// could refuse every retry of a notification first missed; the default is
// 5 days, both directions. A replay within it is a duplicate, as its
// x-request-id is signed. ts is documented in milliseconds, as sdk-go reads
// it, while the documentation's own example is in seconds: a ts below 10^11
// (that is 1973 in milliseconds, year 5138 in seconds) is taken as seconds.
var mercadopagoProvider = Provider{
	Name:      "mercadopago",
	Signature: "`x-signature` `ts=`,`v1=` (hex HMAC-SHA256 of `id:<query data.id>;request-id:<x-request-id>;ts:<ts>;`, absent parts left out; the body is not signed)",
	Docs:      "https://www.mercadopago.com.br/developers/en/docs/your-integrations/notifications/webhooks",
	EventID:   "header:X-Request-Id",
	EventType: "json:action,json:type",
	// A notification names its resource by data.id alone; date_created is
	// when the notification was made (RFC 3339).
	OrderKey:     "json:data.id",
	OrderVersion: "json:date_created",
	OrderDocs:    "https://www.mercadopago.com.br/developers/en/docs/your-integrations/notifications/webhooks",
	Refetch:      mercadopagoRefetch,
	Tolerance:    5 * 24 * time.Hour,
	Redact:       []string{mpSigHeader},
	// A 200 or 201 within 22 seconds, else a retry every 15 minutes, less
	// often after the third, for up to 4 days (Webhooks, "Validar
	// notificaciones"): past the third, the intervals are not published.
	Timeout: 22 * time.Second,
	Retries: Retries{
		Delays: append([]time.Duration{15 * time.Minute, 15 * time.Minute, 15 * time.Minute}, backoff(7, 30*time.Minute, 0)...),
		Note:   "every 15 minutes 3 times, then less often for up to 4 days: doubling from 30 minutes",
	},
	Samples: []Sample{
		{Type: "payment.updated", File: "mercadopago/payment.updated.json", Query: "data.id={{resource}}&type=payment", ID: "bb56a2f1-6aae-46ac-982e-9dcd3581d08e", Resource: "123456789012", Key: "json:data.id", Version: "json:date_created"},
	},
	signer: mercadopagoSigner,
	verifier: func(o Options) (Verifier, error) {
		return &mercadopagoVerifier{keys: rawKeys(sha256.New, o.Secrets), tol: o.Tolerance}, nil
	},
}

type mercadopagoVerifier struct {
	keys []*macKey
	tol  time.Duration
}

func (v *mercadopagoVerifier) Verify(http.Header, []byte, time.Time) error {
	return errNoURL("mercadopago")
}

func (v *mercadopagoVerifier) VerifyRequest(r *Request, now time.Time) error {
	sig := strings.TrimSpace(r.Header.Get(mpSigHeader))
	if sig == "" {
		return fmt.Errorf("mercadopago: %s: %w", mpSigHeader, ErrMissing)
	}
	ts, v1, err := parseMercadoPagoSignature(sig)
	if err != nil {
		return err
	}
	t, ok := parseUnix(ts)
	if !ok {
		return fmt.Errorf("mercadopago: %s: ts is not a decimal Unix time: %w", mpSigHeader, ErrMalformed)
	}
	var want [sha256.Size]byte
	if !decodeHex(want[:], v1, true) {
		return fmt.Errorf("mercadopago: %s: v1 is not 64 lower-case hex digits: %w", mpSigHeader, ErrMalformed)
	}
	if t < 1e11 {
		t *= 1000
	}
	if !freshMillis(t, now, v.tol, true) {
		return fmt.Errorf("mercadopago: %s: %w", mpSigHeader, ErrTimestamp)
	}
	manifest := mercadoPagoManifest(queryValue(r.URL, "data.id"), r.Header.Get(mpRequestIDHeader), ts)
	var mac [maxMAC]byte
	for _, k := range v.keys {
		if hmac.Equal(k.sum(mac[:], nil, manifest), want[:]) {
			return nil
		}
	}
	return fmt.Errorf("mercadopago: %s: %w", mpSigHeader, ErrMismatch)
}

// parseMercadoPagoSignature reads ts and v1 from "ts=<ts>,v1=<hex>" as
// sdk-go reads them: entries separated by ",", keys case-insensitive,
// spaces around keys and values dropped, entries without "=" or with an
// empty side skipped, the last of a repeated key kept, other versions
// (v2, ...) ignored.
func parseMercadoPagoSignature(sig string) (ts, v1 string, err error) {
	hashes := 0
	for rest := sig; rest != ""; {
		var part string
		part, rest, _ = strings.Cut(rest, ",")
		key, value, ok := strings.Cut(part, "=")
		key, value = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(value)
		if !ok || key == "" || value == "" {
			continue
		}
		switch {
		case key == "ts":
			ts = value
		case key == "v1":
			v1 = value
			hashes++
		case len(key) > 1 && key[0] == 'v' && strings.Trim(key[1:], "0123456789") == "":
			hashes++
		}
	}
	switch {
	case ts == "" && hashes == 0:
		return "", "", fmt.Errorf("mercadopago: %s: want ts=<ts>,v1=<hex>: %w", mpSigHeader, ErrMalformed)
	case ts == "":
		return "", "", fmt.Errorf("mercadopago: %s: no ts: %w", mpSigHeader, ErrMalformed)
	case v1 == "":
		return "", "", fmt.Errorf("mercadopago: %s: no v1 signature: %w", mpSigHeader, ErrMalformed)
	}
	return ts, v1, nil
}

// mercadoPagoManifest is the signed string; a part whose value is empty is
// left out.
func mercadoPagoManifest(dataID, requestID, ts string) string {
	var b strings.Builder
	if dataID = strings.TrimSpace(dataID); dataID != "" {
		b.WriteString("id:" + dataID + ";")
	}
	if requestID = strings.TrimSpace(requestID); requestID != "" {
		b.WriteString("request-id:" + requestID + ";")
	}
	b.WriteString("ts:" + ts + ";")
	return b.String()
}

// queryValue returns the first value of the query parameter name in
// rawURL, "" when it has none. A malformed pair elsewhere in the query
// does not hide it.
func queryValue(rawURL, name string) string {
	_, query, ok := strings.Cut(rawURL, "?")
	if !ok {
		return ""
	}
	query, _, _ = strings.Cut(query, "#")
	vals, _ := url.ParseQuery(query)
	return vals.Get(name)
}

// mercadopagoSigner signs the manifest of the URL's data.id, the
// x-request-id header SetHeaders set and a timestamp in milliseconds, as
// sdk-go reads it.
func mercadopagoSigner(o Options) (*Signer, error) {
	key := []byte(o.Secrets[0])
	return signs(func(r *Request, now time.Time) error {
		ts := unixMilli(now)
		manifest := mercadoPagoManifest(queryValue(r.URL, "data.id"), r.Header.Get(mpRequestIDHeader), ts)
		r.Header.Set(mpSigHeader, "ts="+ts+",v1="+hexMAC(hmacOf(sha256.New, key, []byte(manifest))))
		return nil
	})
}

// mercadopagoRefetch: a notification carries only its resource's type and
// data.id, so the resource is always read from the API: GET
// /v1/payments/{id} for a payment, and the resource of each other
// documented notification type.
var mercadopagoRefetch = &Refetch{
	Base:     "https://api.mercadopago.com",
	Docs:     "https://www.mercadopago.com.br/developers/en/reference/payments/_payments_id/get",
	What:     "`GET /v1/payments/{data.id}` (and the resource of each other notification `type`)",
	Rate:     "10/s",
	RateNote: "not published by Mercado Pago: a conservative default",
	Request:  mercadopagoRequest,
}

// mercadopagoPaths maps a notification's type to its resource's path.
var mercadopagoPaths = map[string]string{
	"payment":                         "/v1/payments/",
	"merchant_order":                  "/merchant_orders/",
	"topic_merchant_order_wh":         "/merchant_orders/",
	"subscription_preapproval":        "/preapproval/",
	"subscription_preapproval_plan":   "/preapproval_plan/",
	"subscription_authorized_payment": "/authorized_payments/",
	"topic_chargebacks_wh":            "/v1/chargebacks/",
}

func mercadopagoRequest(e FetchEvent) (FetchRequest, error) {
	doc, err := jsonObject(e.Body)
	if err != nil {
		return FetchRequest{}, err
	}
	typ := field(doc, "type")
	path, ok := mercadopagoPaths[typ]
	if !ok {
		return FetchRequest{}, noResource("mercadopago: notifications of type %q name no resource hookbox can fetch", typ)
	}
	id, ok := idSegment(field(doc, "data.id"))
	if !ok {
		return FetchRequest{}, noResource("mercadopago: the notification has no data.id")
	}
	return FetchRequest{Path: path + id}, nil
}
