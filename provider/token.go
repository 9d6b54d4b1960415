package provider

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"time"
)

// tokenProvider: a header the source names holds one of the secrets
// itself. It proves the sender knows the secret, nothing about the body.
var tokenProvider = Provider{
	Name:        "token",
	Signature:   "`header` equals the secret",
	Header:      "token",
	TimeoutNote: "no provider",
	Retries:     schemeRetries,
	Samples: []Sample{
		{Type: "order.paid", File: "generic/event.json", ID: "evt_7wVnK2cP9xQ4mR1s", Resource: "ord_3Jb8Lp2Hq6Yt", Key: "json:data.object.id", Version: "json:created"},
	},
	signer: tokenSchemeSigner,
	verifier: func(o Options) (Verifier, error) {
		header, err := headerName(o)
		if err != nil {
			return nil, err
		}
		return newTokenVerifier("token", header, o.Secrets), nil
	},
}

// tokenVerifier checks that a header equals one of the secrets: the gitlab
// preset and the generic token scheme. The body is not signed.
type tokenVerifier struct {
	scheme string
	header string // canonical
	// Digests of the secrets: comparing fixed-size digests in constant time
	// hides the secrets' lengths as well as their bytes.
	digests [][sha256.Size]byte
}

func newTokenVerifier(scheme, header string, secrets []string) *tokenVerifier {
	v := &tokenVerifier{scheme: scheme, header: http.CanonicalHeaderKey(header)}
	for _, s := range secrets {
		v.digests = append(v.digests, sha256.Sum256([]byte(s)))
	}
	return v
}

func (v *tokenVerifier) Verify(h http.Header, _ []byte, _ time.Time) error {
	tok := h.Get(v.header)
	if tok == "" {
		return fmt.Errorf("%s: %s: %w", v.scheme, v.header, ErrMissing)
	}
	var got [sha256.Size]byte
	var buf [256]byte
	if len(tok) <= len(buf) {
		// A fixed array keeps the usual token off the heap.
		got = sha256.Sum256(buf[:copy(buf[:], tok)])
	} else {
		got = sha256.Sum256([]byte(tok))
	}
	match := 0
	for i := range v.digests {
		match |= subtle.ConstantTimeCompare(got[:], v.digests[i][:])
	}
	if match != 1 {
		return fmt.Errorf("%s: %s: %w", v.scheme, v.header, ErrMismatch)
	}
	return nil
}

// tokenSchemeSigner sends the secret in the header the source names.
func tokenSchemeSigner(o Options) (*Signer, error) {
	header, err := headerName(o)
	if err != nil {
		return nil, err
	}
	return tokenSigner(header)(o)
}
