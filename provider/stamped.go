package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// stamped is the shape Stripe, Calendly and Paddle sign with: one header of
// key=value entries, one timestamp entry and one or more signature entries,
// each the hex of HMAC-SHA256 over "<timestamp><join><body>". Every
// signature entry is tried (a sender sends two while a secret rolls), and
// other keys are skipped, so a v0 cannot downgrade the check. Only a
// timestamp older than the tolerance is refused, as each provider's SDKs
// do.
type stamped struct {
	scheme, header string
	sep            string // between entries: "," or ";"
	tsKey, sigKey  string // "t" and "v1"; Paddle's "ts" and "h1"
	join           string // between the timestamp and the body in what is signed
	lowerHex       bool   // hex digits in lower case only, as SDKs that compare hex strings need
}

// verifier is a Verifier of this shape for o's secrets, each the HMAC key
// as the provider shows it (not decoded).
func (s stamped) verifier(o Options) (Verifier, error) {
	return &stampedVerifier{stamped: s, sigPrefix: s.sigKey + "=", keys: rawKeys(sha256.New, o.Secrets), tol: o.Tolerance}, nil
}

type stampedVerifier struct {
	stamped
	sigPrefix string // sigKey + "="
	keys      []*macKey
	tol       time.Duration
}

func (v *stampedVerifier) Verify(h http.Header, body []byte, now time.Time) error {
	val := h.Get(v.header)
	if val == "" {
		return fmt.Errorf("%s: %s: %w", v.scheme, v.header, ErrMissing)
	}
	ts, sigs, good, problem := v.parse(val)
	if problem != "" {
		return fmt.Errorf("%s: %s: %s: %w", v.scheme, v.header, problem, ErrMalformed)
	}
	t, _ := parseUnix(ts) // parse checked it
	switch {
	case sigs == 0:
		return fmt.Errorf("%s: %s: no %s signature: %w", v.scheme, v.header, v.sigKey, ErrMalformed)
	case good == 0 && v.lowerHex:
		return fmt.Errorf("%s: %s: no %s signature is 64 lower-case hex digits: %w", v.scheme, v.header, v.sigKey, ErrMalformed)
	case good == 0:
		return fmt.Errorf("%s: %s: no %s signature is 64 hex digits: %w", v.scheme, v.header, v.sigKey, ErrMalformed)
	}
	if !fresh(t, now, v.tol, false) {
		return fmt.Errorf("%s: %s: %w", v.scheme, v.header, ErrTimestamp)
	}
	var mac [maxMAC]byte
	for _, k := range v.keys {
		if v.anySig(val, k.sum(mac[:], body, ts, v.join), v.sigPrefix) {
			return nil
		}
	}
	return fmt.Errorf("%s: %s: %w", v.scheme, v.header, ErrMismatch)
}

// parse reads a header value: its one timestamp, a decimal Unix time, how
// many signature entries it has and how many of those are well formed. The
// problem names what is wrong, never a value.
func (s stamped) parse(val string) (ts string, sigs, good int, problem string) {
	haveTS := false
	for rest := val; rest != ""; {
		var item string
		item, rest, _ = strings.Cut(rest, s.sep)
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, value, ok := strings.Cut(item, "=")
		if !ok {
			return "", 0, 0, "entry without '='"
		}
		switch key {
		case s.tsKey:
			if haveTS {
				return "", 0, 0, "more than one " + s.tsKey + "="
			}
			ts, haveTS = value, true
		case s.sigKey:
			sigs++
			var sig [sha256.Size]byte
			if decodeHex(sig[:], value, s.lowerHex) {
				good++
			}
		}
	}
	if !haveTS {
		return "", 0, 0, "no " + s.tsKey + "= timestamp"
	}
	if _, ok := parseUnix(ts); !ok {
		return "", 0, 0, s.tsKey + " is not a decimal Unix time"
	}
	return ts, sigs, good, ""
}

// anySig reports whether any well-formed signature entry (prefix: the
// signature key and "=") of a header that already parsed equals mac.
func (s stamped) anySig(val string, mac []byte, prefix string) bool {
	for rest := val; rest != ""; {
		var item string
		item, rest, _ = strings.Cut(rest, s.sep)
		value, ok := strings.CutPrefix(strings.TrimSpace(item), prefix)
		if !ok {
			continue
		}
		var sig [sha256.Size]byte
		if decodeHex(sig[:], value, s.lowerHex) && hmac.Equal(sig[:], mac) {
			return true
		}
	}
	return false
}

// signer signs as the provider does: one timestamp entry, and one
// signature entry, the lower-case hex of HMAC-SHA256 over
// "<timestamp><join><body>" keyed with the secret as the provider shows
// it.
func (s stamped) signer(o Options) (*Signer, error) {
	key := []byte(o.Secrets[0])
	return signs(func(r *Request, now time.Time) error {
		ts := unix(now)
		sig := hexMAC(hmacOf(sha256.New, key, []byte(ts+s.join), r.Body))
		r.Header.Set(s.header, s.tsKey+"="+ts+s.sep+s.sigKey+"="+sig)
		return nil
	})
}
