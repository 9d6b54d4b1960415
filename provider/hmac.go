package provider

import (
	"crypto/hmac"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// hmacVerifier checks a header holding prefix + encoding(HMAC(secret, body)):
// the generic hmac scheme, and the github and shopify presets. The generic
// scheme accepts hex digits of either case, since senders differ; github
// accepts only lower case (see decodeHex).
type hmacVerifier struct {
	scheme   string
	header   string // canonical
	prefix   string
	size     int  // digest length in bytes
	base64   bool // else hex
	lowerHex bool // reject upper-case hex digits
	keys     []*macKey
}

func (v *hmacVerifier) Verify(h http.Header, body []byte, _ time.Time) error {
	val := h.Get(v.header)
	if val == "" {
		return fmt.Errorf("%s: %s: %w", v.scheme, v.header, ErrMissing)
	}
	enc, ok := strings.CutPrefix(val, v.prefix)
	if !ok {
		return fmt.Errorf("%s: %s: want prefix %q: %w", v.scheme, v.header, v.prefix, ErrMalformed)
	}
	var buf [maxMAC]byte
	want := buf[:v.size]
	if v.base64 {
		if !decodeBase64(want, enc) {
			return fmt.Errorf("%s: %s: not base64 of a %d-byte digest: %w", v.scheme, v.header, v.size, ErrMalformed)
		}
	} else if !decodeHex(want, enc, v.lowerHex) {
		what := "hex"
		if v.lowerHex {
			what = "lower-case hex"
		}
		return fmt.Errorf("%s: %s: not %s of a %d-byte digest: %w", v.scheme, v.header, what, v.size, ErrMalformed)
	}
	var mac [maxMAC]byte
	for _, k := range v.keys {
		if hmac.Equal(k.sum(mac[:], body), want) {
			return nil
		}
	}
	return fmt.Errorf("%s: %s: %w", v.scheme, v.header, ErrMismatch)
}
