package provider

import (
	"crypto/sha1"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"
)

const pagarmeHeader = "X-Hub-Signature"

// pagarmeProvider is pagar.me's postbacks (docs.pagar.me "Validando um
// postback"): X-Hub-Signature is "sha1=" + the lower-case hex of
// HMAC-SHA1(API key, body), or "sha256=" with HMAC-SHA256; the official
// pagarme-ruby (Postback.valid_request_signature?) takes the algorithm the
// prefix names, pagarme-js computes SHA-1. The key is the account's secret
// API key (ak_live_…). No timestamp is signed.
//
// A postback's body is form encoded (id=…&event=transaction_status_changed
// &current_status=paid&…), and its id is the transaction's or the
// subscription's, the same in every status change of it: the id is the
// body's hash. A redelivery resends the postback's stored payload, and two
// status changes differ in their body (old_status, current_status,
// date_updated). A form body has no place a location can read a type
// from: set event_type on a source whose postbacks are JSON.
var pagarmeProvider = Provider{
	Name:        "pagarme",
	Signature:   "`X-Hub-Signature` (`sha1=` or `sha256=` hex, keyed with the API key), no timestamp",
	Docs:        "https://docs.pagar.me/v4/docs/gerenciando-postbacks",
	EventID:     "body-sha256",
	Redact:      []string{pagarmeHeader},
	TimeoutNote: "not published",
	Retries:     genericRetries,
	Samples: []Sample{
		{File: "pagarme/transaction_status_changed.form", ContentType: "application/x-www-form-urlencoded", ID: "po_cjlzhftgo0tg0hm73c0uh0zfq", Resource: "4521327"},
	},
	signer: bodySigner(pagarmeHeader, "sha1=", sha1.New, hexMAC),
	verifier: func(o Options) (Verifier, error) {
		return &pagarmeVerifier{
			sha1: hmacVerifier{
				scheme: "pagarme", header: pagarmeHeader, prefix: "sha1=", size: sha1.Size,
				lowerHex: true, keys: rawKeys(sha1.New, o.Secrets),
			},
			sha256: hmacVerifier{
				scheme: "pagarme", header: pagarmeHeader, prefix: "sha256=", size: sha256.Size,
				lowerHex: true, keys: rawKeys(sha256.New, o.Secrets),
			},
		}, nil
	},
}

// pagarmeVerifier checks the HMAC the header's prefix names, SHA-1 or
// SHA-256 and no other, with lower-case hex as the SDKs' string comparison
// needs.
type pagarmeVerifier struct {
	sha1, sha256 hmacVerifier
}

func (v *pagarmeVerifier) Verify(h http.Header, body []byte, now time.Time) error {
	val := h.Get(pagarmeHeader)
	switch {
	case val == "":
		return fmt.Errorf("pagarme: %s: %w", pagarmeHeader, ErrMissing)
	case strings.HasPrefix(val, "sha256="):
		return v.sha256.Verify(h, body, now)
	case strings.HasPrefix(val, "sha1="):
		return v.sha1.Verify(h, body, now)
	}
	return fmt.Errorf("pagarme: %s: want prefix \"sha1=\" or \"sha256=\": %w", pagarmeHeader, ErrMalformed)
}
