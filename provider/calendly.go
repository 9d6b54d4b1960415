package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

const calendlyHeader = "Calendly-Webhook-Signature"

// calendlyProvider: Calendly-Webhook-Signature is t=<unix>,v1=<hex>, v1
// the lower-case hex of HMAC-SHA256 over "<t>.<body>" keyed with the
// subscription's signing key (developer.calendly.com/api-docs/overview/
// webhooks/webhook-signatures). The body's "event" ("invitee.created") is
// the type.
//
// Calendly sends no event or delivery id: the id is the body's hash. A
// retry resends the same body (only t and the signature are new), and two
// events differ in their body (the event name, the invitee, created_at).
var calendlyProvider = Provider{
	Name:      "calendly",
	Signature: "`Calendly-Webhook-Signature` `t=,v1=` (hex of `t.body`, every `v1` tried), `t` at most 3 min old",
	Docs:      "https://developer.calendly.com/api-docs/overview/webhooks/webhook-signatures",
	EventID:   "body-sha256",
	EventType: "json:event",
	// Calendly's docs refuse a t more than 3 minutes old and check no
	// other direction; Calendly publishes no SDK.
	Tolerance: 3 * time.Minute,
	Redact:    []string{calendlyHeader},
	verifier: func(o Options) (Verifier, error) {
		return &calendlyVerifier{keys: rawKeys(sha256.New, o.Secrets), tol: o.Tolerance}, nil
	},
}

// calendlyVerifier checks the header as Calendly's docs do: one t, hex
// digits in lower case as the docs' string comparison needs, and only a t
// older than the tolerance refused. Every v1 is tried, so an extra entry
// can never hide a matching one; other keys are skipped, so they cannot
// stand in for v1.
type calendlyVerifier struct {
	keys []*macKey
	tol  time.Duration
}

func (v *calendlyVerifier) Verify(h http.Header, body []byte, now time.Time) error {
	val := h.Get(calendlyHeader)
	if val == "" {
		return fmt.Errorf("calendly: %s: %w", calendlyHeader, ErrMissing)
	}
	ts, v1, good, err := parseCalendly(val)
	if err != nil {
		return fmt.Errorf("calendly: %s: %s: %w", calendlyHeader, err, ErrMalformed)
	}
	switch {
	case v1 == 0:
		return fmt.Errorf("calendly: %s: no v1 signature: %w", calendlyHeader, ErrMalformed)
	case good == 0:
		return fmt.Errorf("calendly: %s: no v1 signature is 64 lower-case hex digits: %w", calendlyHeader, ErrMalformed)
	}
	t, _ := parseUnix(ts) // parseCalendly checked it
	if !fresh(t, now, v.tol, false) {
		return fmt.Errorf("calendly: %s: %w", calendlyHeader, ErrTimestamp)
	}
	var mac [maxMAC]byte
	for _, k := range v.keys {
		if calendlyAnyV1(val, k.sum(mac[:], body, ts, ".")) {
			return nil
		}
	}
	return fmt.Errorf("calendly: %s: %w", calendlyHeader, ErrMismatch)
}

// parseCalendly reads a Calendly-Webhook-Signature value: its one t, a
// decimal Unix time, how many v1 entries it has and how many of those are
// well formed. The error text names what is wrong, never a value.
func parseCalendly(val string) (ts string, v1, good int, err error) {
	haveT := false
	for rest := val; rest != ""; {
		var item string
		item, rest, _ = strings.Cut(rest, ",")
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, value, ok := strings.Cut(item, "=")
		if !ok {
			return "", 0, 0, errors.New("entry without '='")
		}
		switch key {
		case "t":
			if haveT {
				return "", 0, 0, errors.New("more than one t=")
			}
			ts, haveT = value, true
		case "v1":
			v1++
			var sig [sha256.Size]byte
			if decodeHex(sig[:], value, true) {
				good++
			}
		}
	}
	if !haveT {
		return "", 0, 0, errors.New("no t= timestamp")
	}
	if _, ok := parseUnix(ts); !ok {
		return "", 0, 0, errors.New("t is not a decimal Unix time")
	}
	return ts, v1, good, nil
}

// calendlyAnyV1 reports whether any well-formed v1 entry of a header that
// already parsed equals mac.
func calendlyAnyV1(val string, mac []byte) bool {
	for rest := val; rest != ""; {
		var item string
		item, rest, _ = strings.Cut(rest, ",")
		value, ok := strings.CutPrefix(strings.TrimSpace(item), "v1=")
		if !ok {
			continue
		}
		var sig [sha256.Size]byte
		if decodeHex(sig[:], value, true) && hmac.Equal(sig[:], mac) {
			return true
		}
	}
	return false
}
