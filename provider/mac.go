package provider

import (
	"crypto/hmac"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"net/http"
	"strings"
	"sync"
	"time"
)

// maxMAC is the largest digest any scheme uses (HMAC-SHA512).
const maxMAC = sha512.Size

// macKey computes HMACs under one secret. A hash.Hash is not safe for
// concurrent use, so each Verify call borrows one from a pool; crypto/hmac
// keeps the keyed inner and outer states after its first Reset, so a reused
// hash costs neither an allocation nor the key schedule.
type macKey struct {
	pool sync.Pool // of *macState
}

type macState struct {
	h   hash.Hash
	pre []byte // signed bytes before the body: timestamp, id
	sum [maxMAC]byte
}

// rawKeys keys a MAC with each secret's bytes as they are.
func rawKeys(fn func() hash.Hash, secrets []string) []*macKey {
	keys := make([]*macKey, len(secrets))
	for i, s := range secrets {
		keys[i] = newMACKey(fn, []byte(s))
	}
	return keys
}

func newMACKey(fn func() hash.Hash, key []byte) *macKey {
	key = append([]byte(nil), key...)
	k := &macKey{}
	k.pool.New = func() any { return &macState{h: hmac.New(fn, key)} }
	return k
}

// sum writes HMAC(pre[0] || pre[1] || ... || body) into dst and returns it;
// dst must hold the digest size. The parts before the body are gathered in
// the pooled buffer so they reach the hash in one Write, with no string
// conversion.
func (k *macKey) sum(dst, body []byte, pre ...string) []byte {
	return k.sumAround(dst, pre, body, "")
}

// sumAround writes HMAC(pre[0] || ... || body || post) into dst, for a
// scheme that signs something after the body (HubSpot's timestamp).
func (k *macKey) sumAround(dst []byte, pre []string, body []byte, post string) []byte {
	st := k.pool.Get().(*macState)
	st.h.Reset()
	st.pre = st.pre[:0]
	for _, p := range pre {
		st.pre = append(st.pre, p...)
	}
	if len(st.pre) > 0 {
		st.h.Write(st.pre)
	}
	st.h.Write(body)
	if post != "" {
		st.pre = append(st.pre[:0], post...)
		st.h.Write(st.pre)
	}
	n := copy(dst, st.h.Sum(st.sum[:0]))
	// A hostile id header must not pin a large buffer in the pool.
	if cap(st.pre) > 1<<10 {
		st.pre = nil
	}
	k.pool.Put(st)
	return dst[:n]
}

// decodeHex decodes s into dst, which must be exactly half as long as s.
// With lowerOnly, upper-case digits are rejected: GitHub's own verifier
// compares the lower-case string, and accepting what it rejects would make
// hookbox the odd one out.
func decodeHex(dst []byte, s string, lowerOnly bool) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := fromHex(s[2*i], lowerOnly)
		lo, ok2 := fromHex(s[2*i+1], lowerOnly)
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func fromHex(c byte, lowerOnly bool) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F' && !lowerOnly:
		return c - 'A' + 10, true
	}
	return 0, false
}

// decodeBase64 decodes standard base64, padded or unpadded, into dst, which
// must be exactly as long as the decoded value.
func decodeBase64(dst []byte, s string) bool {
	enc := base64.StdEncoding
	switch len(s) {
	case base64.StdEncoding.EncodedLen(len(dst)):
	case base64.RawStdEncoding.EncodedLen(len(dst)):
		enc = base64.RawStdEncoding
	default:
		return false
	}
	// Copy into fixed arrays so decoding needs no heap allocation.
	var src [base64Max]byte
	var out [maxMAC + 3]byte
	n := copy(src[:], s)
	m, err := enc.Decode(out[:], src[:n])
	if err != nil || m != len(dst) {
		return false
	}
	copy(dst, out[:m])
	return true
}

// base64Max is the padded base64 length of the largest digest.
const base64Max = (maxMAC + 2) / 3 * 4

// parseUnix parses a decimal Unix time in seconds. Signs, spaces and more
// than 18 digits (an overflow long before that) are rejected.
func parseUnix(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// fresh reports whether ts is no more than tol older than now and, when
// future is set, no more than tol ahead of it. The bound itself is accepted,
// as the providers' SDKs do.
func fresh(ts int64, now time.Time, tol time.Duration, future bool) bool {
	age := now.Sub(time.Unix(ts, 0)) // saturates for absurd ts
	if age > tol {
		return false
	}
	return !future || age >= -tol
}

// freshMillis is fresh for a Unix time in milliseconds.
func freshMillis(ms int64, now time.Time, tol time.Duration, future bool) bool {
	age := now.Sub(time.UnixMilli(ms))
	if age > tol {
		return false
	}
	return !future || age >= -tol
}

// hmacVerifier checks a header holding prefix + encoding(HMAC(secret, body)):
// the generic hmac scheme, and the github and shopify presets. The generic
// scheme accepts hex digits of either case, since senders differ; github
// accepts only lower case (see decodeHex).
type hmacVerifier struct {
	scheme string
	header string // canonical
	// preferred, if set, is a header checked instead of header when the
	// request has it (Shopify's Events deliveries).
	preferred string
	prefix    string
	size      int  // digest length in bytes
	base64    bool // else hex
	lowerHex  bool // reject upper-case hex digits
	keys      []*macKey
}

func (v *hmacVerifier) Verify(h http.Header, body []byte, _ time.Time) error {
	name := v.header
	if v.preferred != "" && h.Get(v.preferred) != "" {
		name = v.preferred
	}
	val := h.Get(name)
	if val == "" {
		return fmt.Errorf("%s: %s: %w", v.scheme, name, ErrMissing)
	}
	enc, ok := strings.CutPrefix(val, v.prefix)
	if !ok {
		return fmt.Errorf("%s: %s: want prefix %q: %w", v.scheme, name, v.prefix, ErrMalformed)
	}
	var buf [maxMAC]byte
	want := buf[:v.size]
	if v.base64 {
		if !decodeBase64(want, enc) {
			return fmt.Errorf("%s: %s: not base64 of a %d-byte digest: %w", v.scheme, name, v.size, ErrMalformed)
		}
	} else if !decodeHex(want, enc, v.lowerHex) {
		what := "hex"
		if v.lowerHex {
			what = "lower-case hex"
		}
		return fmt.Errorf("%s: %s: not %s of a %d-byte digest: %w", v.scheme, name, what, v.size, ErrMalformed)
	}
	var mac [maxMAC]byte
	for _, k := range v.keys {
		if hmac.Equal(k.sum(mac[:], body), want) {
			return nil
		}
	}
	return fmt.Errorf("%s: %s: %w", v.scheme, name, ErrMismatch)
}
