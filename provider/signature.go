// Package provider verifies webhook signatures over the raw request bytes.
//
// A Verifier is built once per source from Options and then checks each
// request's headers and body against the source's secrets. Every scheme a
// hookbox preset names is here (stripe, github, shopify, slack, standard,
// gitlab) plus the generic hmac and token schemes and none.
//
// Errors returned by Verify wrap exactly one of ErrMissing, ErrMalformed,
// ErrMismatch or ErrTimestamp. Their text names the scheme and the header but
// never a secret, a computed signature or the received signature, because the
// receiver sends it back in the 401 body and logs it.
package provider

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strings"
	"time"
)

// Sentinel errors wrapped by Verify. The receiver maps all of them to 401.
var (
	// ErrMissing: the signature header (or the timestamp or id header the
	// scheme signs) is absent or empty.
	ErrMissing = errors.New("signature missing")
	// ErrMalformed: the header is present but cannot be parsed: bad hex or
	// base64, wrong length, no entry of the supported version, a timestamp
	// that is not a decimal Unix time.
	ErrMalformed = errors.New("signature malformed")
	// ErrMismatch: the header is well formed but no secret produced a
	// matching signature.
	ErrMismatch = errors.New("signature mismatch")
	// ErrTimestamp: the signed timestamp is outside the tolerance.
	ErrTimestamp = errors.New("signature timestamp outside the tolerance")
)

// defaultTolerance is the accepted clock difference for schemes that sign a
// timestamp when Options.Tolerance is zero. It is the value the Stripe, Slack
// and Standard Webhooks SDKs use.
const defaultTolerance = 5 * time.Minute

// Options configures one source's verifier.
type Options struct {
	Scheme    string        // "stripe" | "github" | "shopify" | "slack" | "standard" | "gitlab" | "hmac" | "token" | "none"
	Secrets   []string      // one or more (rotation): a request is valid if ANY secret verifies it
	Tolerance time.Duration // schemes with a timestamp (stripe, slack, standard); 0 means the scheme default of 5m
	Header    string        // hmac and token: header name carrying the signature/token
	Algorithm string        // hmac: "sha256" (default) | "sha1" | "sha512"
	Encoding  string        // hmac: "hex" (default) | "base64"
	Prefix    string        // hmac: literal prefix before the encoded digest, e.g. "sha256="
}

// Verifier checks one request. now is the receiver's clock (injected, for tests).
//
// Verify returns nil when the request is authentic, otherwise an error
// wrapping ErrMissing, ErrMalformed, ErrMismatch or ErrTimestamp.
// Implementations are safe for concurrent use.
type Verifier interface {
	Verify(h http.Header, body []byte, now time.Time) error
}

// New builds the verifier for o.Scheme. It returns an error for an unknown
// scheme, no secrets (except for "none"), an empty secret, a negative
// tolerance, an hmac or token scheme without Header, an unknown hmac
// algorithm or encoding, and a standard secret that is not base64 after its
// "whsec_" prefix. Error text never contains a secret.
func New(o Options) (Verifier, error) {
	if o.Scheme == "none" {
		return noneVerifier{}, nil
	}
	switch o.Scheme {
	case "stripe", "github", "shopify", "slack", "standard", "gitlab", "hmac", "token":
	case "":
		return nil, errors.New("signature: no scheme")
	default:
		return nil, fmt.Errorf("signature: unknown scheme %q", o.Scheme)
	}
	if len(o.Secrets) == 0 {
		return nil, fmt.Errorf("signature: %s: no secrets", o.Scheme)
	}
	for i, s := range o.Secrets {
		if s == "" {
			return nil, fmt.Errorf("signature: %s: secret %d is empty", o.Scheme, i+1)
		}
	}
	if o.Tolerance < 0 {
		return nil, fmt.Errorf("signature: %s: negative tolerance %s", o.Scheme, o.Tolerance)
	}
	tol := o.Tolerance
	if tol == 0 {
		tol = defaultTolerance
	}

	switch o.Scheme {
	case "stripe":
		// Stripe keys the HMAC with the whole "whsec_..." string, undecoded.
		return &stripeVerifier{keys: rawKeys(sha256.New, o.Secrets), tol: tol}, nil
	case "slack":
		return &slackVerifier{keys: rawKeys(sha256.New, o.Secrets), tol: tol}, nil
	case "standard":
		keys := make([]*macKey, len(o.Secrets))
		for i, s := range o.Secrets {
			k, err := decodeWhsec(s)
			if err != nil {
				return nil, fmt.Errorf("signature: standard: secret %d: %w", i+1, err)
			}
			keys[i] = newMACKey(sha256.New, k)
		}
		return &standardVerifier{keys: keys, tol: tol}, nil
	case "github":
		return &hmacVerifier{
			scheme: "github", header: "X-Hub-Signature-256", prefix: "sha256=",
			size: sha256.Size, lowerHex: true, keys: rawKeys(sha256.New, o.Secrets),
		}, nil
	case "shopify":
		return &hmacVerifier{
			scheme: "shopify", header: "X-Shopify-Hmac-Sha256",
			size: sha256.Size, base64: true, keys: rawKeys(sha256.New, o.Secrets),
		}, nil
	case "gitlab":
		return newTokenVerifier("gitlab", "X-Gitlab-Token", o.Secrets), nil
	case "token":
		header, err := headerName(o)
		if err != nil {
			return nil, err
		}
		return newTokenVerifier("token", header, o.Secrets), nil
	default: // "hmac"
		return newHMAC(o)
	}
}

func newHMAC(o Options) (Verifier, error) {
	header, err := headerName(o)
	if err != nil {
		return nil, err
	}
	var fn func() hash.Hash
	var size int
	switch strings.ToLower(o.Algorithm) {
	case "", "sha256":
		fn, size = sha256.New, sha256.Size
	case "sha1":
		fn, size = sha1.New, sha1.Size
	case "sha512":
		fn, size = sha512.New, sha512.Size
	default:
		return nil, fmt.Errorf("signature: hmac: unknown algorithm %q (want sha256, sha1 or sha512)", o.Algorithm)
	}
	v := &hmacVerifier{scheme: "hmac", header: header, prefix: o.Prefix, size: size, keys: rawKeys(fn, o.Secrets)}
	switch strings.ToLower(o.Encoding) {
	case "", "hex":
	case "base64":
		v.base64 = true
	default:
		return nil, fmt.Errorf("signature: hmac: unknown encoding %q (want hex or base64)", o.Encoding)
	}
	return v, nil
}

func headerName(o Options) (string, error) {
	h := strings.TrimSpace(o.Header)
	if h == "" {
		return "", fmt.Errorf("signature: %s: no header", o.Scheme)
	}
	if strings.ContainsAny(h, " \t\r\n:") {
		return "", fmt.Errorf("signature: %s: invalid header name %q", o.Scheme, h)
	}
	return http.CanonicalHeaderKey(h), nil
}

// CheckSecret reports whether secret is usable by scheme, without building a
// verifier: only "standard" has a format (whsec_ and base64). The error
// never quotes the secret.
func CheckSecret(scheme, secret string) error {
	if scheme == "standard" {
		_, err := decodeWhsec(secret)
		return err
	}
	return nil
}

// decodeWhsec turns a Standard Webhooks secret into HMAC key bytes: the
// "whsec_" prefix is dropped and the rest is standard base64, padded or not
// (the spec's own examples are padded, some dashboards show them unpadded).
func decodeWhsec(s string) ([]byte, error) {
	b64 := strings.TrimPrefix(s, "whsec_")
	enc := base64.StdEncoding
	if !strings.HasSuffix(b64, "=") && len(b64)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	k, err := enc.DecodeString(b64)
	if err != nil {
		// The base64 error quotes an offset, not the input, but keep the
		// message fixed so no part of the secret can ever reach a log.
		return nil, errors.New("want whsec_ followed by base64, exactly as the sender's dashboard shows it")
	}
	if len(k) == 0 {
		return nil, errors.New("empty key after the whsec_ prefix")
	}
	return k, nil
}

func rawKeys(fn func() hash.Hash, secrets []string) []*macKey {
	keys := make([]*macKey, len(secrets))
	for i, s := range secrets {
		keys[i] = newMACKey(fn, []byte(s))
	}
	return keys
}

type noneVerifier struct{}

func (noneVerifier) Verify(http.Header, []byte, time.Time) error { return nil }
