package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"
)

const (
	hubspotSigHeader = "X-Hubspot-Signature-V3"
	hubspotTSHeader  = "X-Hubspot-Request-Timestamp"
	// hubspotOldSigHeader carries the v1 and v2 signatures (SHA-256 of the
	// client secret and the request), sent beside v3 for older receivers:
	// never checked, never stored.
	hubspotOldSigHeader = "X-Hubspot-Signature"
)

// hubspotProvider: X-HubSpot-Signature-v3 is base64 of HMAC-SHA256, keyed
// with the app's client secret, over the method, the URI HubSpot called,
// the body and X-HubSpot-Request-Timestamp (milliseconds), concatenated.
// HubSpot's "Validating requests" page has the URI's percent-encoded
// characters of its table decoded before signing (%3A ":", %2F "/", %3F
// "?", %40 "@", %21 "!", %24 "$", %27 "'", %28 "(", %29 ")", %2A "*", %2C
// ",", %3B ";"), and a timestamp older than 5 minutes rejected; HubSpot's
// Python SDK (hubspot/utils/signature.py) accepts any timestamp in the
// future, and so does this preset (the page names only the past).
//
// A webhook's body is a JSON array of up to 100 events: the request is
// stored as one event, under its first event's eventId and
// subscriptionType (each event's attemptNumber changes at every retry, so
// the body's hash would not dedupe them). Another request HubSpot signs so
// (a workflow action's, a card's) has no array: its id is the body's hash.
var hubspotProvider = Provider{
	Name:      "hubspot",
	Signature: "`X-HubSpot-Signature-v3` (base64 HMAC-SHA256 of method + decoded URI + body + `X-HubSpot-Request-Timestamp`); `public_url`",
	Docs:      "https://developers.hubspot.com/docs/apps/developer-platform/build-apps/authentication/request-validation",
	EventID:   "json:0.eventId,body-sha256",
	EventType: "json:0.subscriptionType",
	Tolerance: 5 * time.Minute,
	Redact:    []string{hubspotSigHeader, hubspotOldSigHeader},
	SignsURL:  true,
	// Webhooks API: an answer later than 5 seconds is a failure, and a
	// failed notification is sent again up to 10 times over the next 24
	// hours, with varying delays.
	Timeout: 5 * time.Second,
	Retries: Retries{
		Delays: backoff(10, time.Minute, 24*time.Hour),
		Note:   "up to 10 times over 24 hours: 10 doubling delays over 24 hours",
	},
	Samples: []Sample{
		{Type: "contact.propertyChange", File: "hubspot/contact.propertyChange.json", ID: "3816279340", Resource: "51203917", Key: "json:0.objectId", Version: "json:0.occurredAt"},
	},
	signer: hubspotSigner,
	verifier: func(o Options) (Verifier, error) {
		return &hubspotVerifier{keys: rawKeys(sha256.New, o.Secrets), tol: o.Tolerance}, nil
	},
}

type hubspotVerifier struct {
	keys []*macKey
	tol  time.Duration
}

func (v *hubspotVerifier) Verify(http.Header, []byte, time.Time) error { return errNoURL("hubspot") }

func (v *hubspotVerifier) VerifyRequest(r *Request, now time.Time) error {
	sig := r.Header.Get(hubspotSigHeader)
	if sig == "" {
		return fmt.Errorf("hubspot: %s: %w", hubspotSigHeader, ErrMissing)
	}
	ts := r.Header.Get(hubspotTSHeader)
	if ts == "" {
		return fmt.Errorf("hubspot: %s: %w", hubspotTSHeader, ErrMissing)
	}
	ms, ok := parseUnix(ts)
	if !ok {
		return fmt.Errorf("hubspot: %s: not a decimal Unix time in milliseconds: %w", hubspotTSHeader, ErrMalformed)
	}
	var want [sha256.Size]byte
	if !decodeBase64(want[:], sig) {
		return fmt.Errorf("hubspot: %s: not base64 of a 32-byte digest: %w", hubspotSigHeader, ErrMalformed)
	}
	if !freshMillis(ms, now, v.tol, false) {
		return fmt.Errorf("hubspot: %s: %w", hubspotTSHeader, ErrTimestamp)
	}
	pre := []string{r.Method, hubspotURI(r.URL)}
	var mac [maxMAC]byte
	for _, k := range v.keys {
		if hmac.Equal(k.sumAround(mac[:], pre, r.Body, ts), want[:]) {
			return nil
		}
	}
	return fmt.Errorf("hubspot: %s: %w", hubspotSigHeader, ErrMismatch)
}

// hubspotDecode is the table of HubSpot's "Validating requests" page: the
// escapes decoded in the URI before it is signed, upper or lower case.
var hubspotDecode = strings.NewReplacer(
	"%3A", ":", "%2F", "/", "%3F", "?", "%40", "@", "%21", "!", "%24", "$",
	"%27", "'", "%28", "(", "%29", ")", "%2A", "*", "%2C", ",", "%3B", ";",
	"%3a", ":", "%2f", "/", "%3f", "?", "%2a", "*", "%2c", ",", "%3b", ";",
)

// hubspotURI is the URI as HubSpot signs it.
func hubspotURI(uri string) string {
	if !strings.Contains(uri, "%") {
		return uri
	}
	return hubspotDecode.Replace(uri)
}

// hubspotSigner signs the method, the URI (its escapes decoded as HubSpot
// decodes them), the body and a timestamp in milliseconds.
func hubspotSigner(o Options) (*Signer, error) {
	key := []byte(o.Secrets[0])
	return signs(func(r *Request, now time.Time) error {
		ts := unixMilli(now)
		method := r.Method
		if method == "" {
			method = http.MethodPost
		}
		r.Header.Set(hubspotTSHeader, ts)
		r.Header.Set(hubspotSigHeader, base64MAC(hmacOf(sha256.New, key, []byte(method+hubspotURI(r.URL)), r.Body, []byte(ts))))
		return nil
	})
}
