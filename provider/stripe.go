package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"net/http"
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
	Tolerance: 5 * time.Minute,
	Redact:    []string{stripeHeader},
	verifier: func(o Options) (Verifier, error) {
		// Stripe keys the HMAC with the whole "whsec_..." string, undecoded.
		return &stripeVerifier{keys: rawKeys(sha256.New, o.Secrets), tol: o.Tolerance}, nil
	},
}

// stripeVerifier checks Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>][,v0=...].
// The signed payload is "<t>.<body>" under HMAC-SHA256 keyed with the whole
// whsec_ string. Every v1 is tried (Stripe sends two while a secret rolls);
// other schemes are ignored so a v0 cannot downgrade the check. Only
// timestamps older than the tolerance are rejected, and hex digits of either
// case are accepted, as stripe-go does.
type stripeVerifier struct {
	keys []*macKey
	tol  time.Duration
}

func (v *stripeVerifier) Verify(h http.Header, body []byte, now time.Time) error {
	val := h.Get(stripeHeader)
	if val == "" {
		return fmt.Errorf("stripe: %s: %w", stripeHeader, ErrMissing)
	}
	var ts string
	haveT := false
	v1, good := 0, 0
	for rest := val; rest != ""; {
		var item string
		item, rest, _ = strings.Cut(rest, ",")
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, value, ok := strings.Cut(item, "=")
		if !ok {
			return fmt.Errorf("stripe: %s: entry without '=': %w", stripeHeader, ErrMalformed)
		}
		switch key {
		case "t":
			if haveT {
				return fmt.Errorf("stripe: %s: more than one t=: %w", stripeHeader, ErrMalformed)
			}
			ts, haveT = value, true
		case "v1":
			v1++
			var sig [32]byte
			if decodeHex(sig[:], value, false) {
				good++
			}
		}
	}
	if !haveT {
		return fmt.Errorf("stripe: %s: no t= timestamp: %w", stripeHeader, ErrMalformed)
	}
	t, ok := parseUnix(ts)
	if !ok {
		return fmt.Errorf("stripe: %s: timestamp is not a decimal Unix time: %w", stripeHeader, ErrMalformed)
	}
	switch {
	case v1 == 0:
		return fmt.Errorf("stripe: %s: no v1 signature: %w", stripeHeader, ErrMalformed)
	case good == 0:
		return fmt.Errorf("stripe: %s: no v1 signature is 64 hex digits: %w", stripeHeader, ErrMalformed)
	}
	if !fresh(t, now, v.tol, false) {
		return fmt.Errorf("stripe: %s: %w", stripeHeader, ErrTimestamp)
	}
	var mac [maxMAC]byte
	for _, k := range v.keys {
		if stripeAnyV1(val, k.sum(mac[:], body, ts, ".")) {
			return nil
		}
	}
	return fmt.Errorf("stripe: %s: %w", stripeHeader, ErrMismatch)
}

// stripeAnyV1 reports whether any well-formed v1 entry of a header that
// already parsed equals mac.
func stripeAnyV1(val string, mac []byte) bool {
	for rest := val; rest != ""; {
		var item string
		item, rest, _ = strings.Cut(rest, ",")
		value, ok := strings.CutPrefix(strings.TrimSpace(item), "v1=")
		if !ok {
			continue
		}
		var sig [32]byte
		if decodeHex(sig[:], value, false) && hmac.Equal(sig[:], mac) {
			return true
		}
	}
	return false
}
