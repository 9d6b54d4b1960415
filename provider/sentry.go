package provider

import (
	"crypto/sha256"
	"net/http"
	"time"
)

// sentryProvider is Sentry's integration platform (internal and public
// integrations; docs.sentry.io/organization/integrations/integration-platform/webhooks/).
//
// Sentry-Hook-Signature is the lower-case hex of HMAC-SHA256 over the body,
// keyed with the integration's Client Secret. Sentry signs the exact string
// it posts (SentryApp.build_signature over AppPlatformEvent.body in
// getsentry/sentry); the docs' snippets re-serialise a parsed body, which
// only happens to give the same bytes, so hookbox checks the raw ones.
// Sentry-Hook-Timestamp is not signed, so it bounds nothing and no
// tolerance applies. A rotated Client Secret is one more secret: every one
// listed is tried.
//
// The id is Request-ID and the type Sentry-Hook-Resource (issue, error,
// comment, event_alert, metric_alert, installation), as the docs describe
// them. Neither is signed. Request-ID is made for each request Sentry
// builds: its task retries (a timeout, a refused connection, 503 or 504:
// three more, five minutes apart) carry a new one. A 503 from hookbox
// stored nothing, so the retry is rightly new; only an answer lost after a
// durable write turns into a second event, which a source with event_id =
// "body-sha256" dedupes (at the price of merging two events whose bodies
// are byte for byte the same).
var sentryProvider = Provider{
	Name:      "sentry",
	Signature: "`Sentry-Hook-Signature` (hex HMAC-SHA256 of the body, the integration's Client Secret; no timestamp signed)",
	Docs:      "https://docs.sentry.io/organization/integrations/integration-platform/webhooks/",
	EventID:   "header:Request-ID",
	EventType: "header:Sentry-Hook-Resource",
	Redact:    []string{"Sentry-Hook-Signature"},
	// A webhook must be answered within 1 second; a timeout, a refused
	// connection, 503 or 504 is retried three more times, five minutes
	// apart, each under a new Request-ID (see above).
	Timeout: time.Second,
	Retries: Retries{
		Delays: []time.Duration{5 * time.Minute, 5 * time.Minute, 5 * time.Minute},
		Note:   "3 retries, 5 minutes apart, each with a new Request-ID",
	},
	Samples: []Sample{
		{Type: "issue", File: "sentry/issue.json", ID: "a2c9e3f4-5b6d-4e7f-8a9b-0c1d2e3f4a5b", Resource: "1170820242", Key: "json:data.issue.id", Version: "json:data.issue.lastSeen"},
	},
	signer:  sentrySigner,
	headers: sentryHeaders,
	verifier: func(o Options) (Verifier, error) {
		return &hmacVerifier{
			scheme: "sentry", header: "Sentry-Hook-Signature",
			size: sha256.Size, lowerHex: true, keys: rawKeys(sha256.New, o.Secrets),
		}, nil
	},
}

// sentrySigner signs the body and sends the unsigned
// Sentry-Hook-Timestamp Sentry sends beside it.
func sentrySigner(o Options) (*Signer, error) {
	key := []byte(o.Secrets[0])
	return signs(func(r *Request, now time.Time) error {
		r.Header.Set("Sentry-Hook-Signature", hexMAC(hmacOf(sha256.New, key, r.Body)))
		r.Header.Set("Sentry-Hook-Timestamp", unix(now))
		return nil
	})
}

// sentryHeaders: Sentry sends a Request-ID with every request, made for
// each request it builds, so a retry carries a new one (see
// sentryProvider): the first attempt's is the event's id, each later
// attempt's one derived from it; set whatever the source's event_id.
func sentryHeaders(h http.Header, e Event) {
	switch {
	case e.ID == "":
	case e.Attempt > 1:
		h.Set("Request-ID", derivedUUID(e.ID, e.Attempt))
	default:
		h.Set("Request-ID", e.ID)
	}
}
