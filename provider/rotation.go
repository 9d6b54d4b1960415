package provider

import (
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"
)

// Match says which of a source's secrets verified a request.
type Match struct {
	// Secret is the secret's place in Options.Secrets, from 0.
	Secret int
	// Of is how many secrets the source has: 0 when no secret was
	// checked (the none scheme), and Secret means nothing.
	Of int
}

// Verified reports whether a secret verified the request.
func (m Match) Verified() bool { return m.Of > 0 }

// String is "secret 2 of 3", counting from 1 as the config lists them,
// or "" when no secret was checked.
func (m Match) String() string {
	if m.Of == 0 {
		return ""
	}
	return fmt.Sprintf("secret %d of %d", m.Secret+1, m.Of)
}

// Check verifies a request with v, a verifier New built, as Verify does,
// and says which secret verified it. Use CheckRequest for a
// RequestVerifier.
func Check(v Verifier, h http.Header, body []byte, now time.Time) (Match, error) {
	switch v := v.(type) {
	case *rotation:
		return v.check(func(one Verifier) error { return one.Verify(h, body, now) })
	case *requestRotation:
		return v.check(func(one Verifier) error { return one.Verify(h, body, now) })
	case noneVerifier:
		return Match{}, nil
	}
	return Match{Of: 1}, v.Verify(h, body, now)
}

// CheckRequest is Check for a RequestVerifier New built.
func CheckRequest(v RequestVerifier, r *Request, now time.Time) (Match, error) {
	if v, ok := v.(*requestRotation); ok {
		return v.check(func(one Verifier) error { return one.(RequestVerifier).VerifyRequest(r, now) })
	}
	return Match{Of: 1}, v.VerifyRequest(r, now)
}

// rotation is the verifier of a source with more than one secret: one
// verifier of the scheme for each secret, tried in the config's order.
// Keeping the loop over the secrets here, rather than in each scheme, is
// what lets every scheme say which secret matched.
type rotation struct {
	each []Verifier
	// last is the secret that verified the latest request, tried first:
	// a sender signs with one secret at a time, so after its first
	// request a rotation costs what one secret does, where trying the
	// others first would build and drop an error for each.
	last atomic.Int32
}

// requestRotation is a rotation of a RequestVerifier's scheme.
type requestRotation struct {
	*rotation
}

// newRotation builds the rotation of o's secrets; all, the scheme's
// verifier of them all, proved that each secret is one the scheme takes.
func newRotation(p Provider, o Options, all Verifier) (Verifier, error) {
	r := &rotation{each: make([]Verifier, len(o.Secrets))}
	for i := range o.Secrets {
		one := o
		one.Secrets = o.Secrets[i : i+1]
		v, err := p.verifier(one)
		if err != nil {
			return nil, fmt.Errorf("signature: %s: secret %d: %w", o.Scheme, i+1, err)
		}
		r.each[i] = v
	}
	if _, ok := all.(RequestVerifier); ok {
		return &requestRotation{r}, nil
	}
	return r, nil
}

// check runs verify with each secret's verifier until one accepts the
// request: the one that verified the latest request first, then the
// others in the config's order. An error other than a mismatch is about
// the request (a missing or malformed header, a stale timestamp), the
// same under every secret: it is returned at once. After mismatches under
// all of them, the first tried's error is.
func (r *rotation) check(verify func(Verifier) error) (Match, error) {
	last := int(r.last.Load())
	err := verify(r.each[last])
	if err == nil {
		return Match{Secret: last, Of: len(r.each)}, nil
	}
	if !errors.Is(err, ErrMismatch) {
		return Match{}, err
	}
	for i, v := range r.each {
		if i == last {
			continue
		}
		switch e := verify(v); {
		case e == nil:
			r.last.Store(int32(i))
			return Match{Secret: i, Of: len(r.each)}, nil
		case !errors.Is(e, ErrMismatch):
			return Match{}, e
		}
	}
	return Match{}, err
}

func (r *rotation) Verify(h http.Header, body []byte, now time.Time) error {
	_, err := Check(r, h, body, now)
	return err
}

func (r *requestRotation) VerifyRequest(req *Request, now time.Time) error {
	_, err := CheckRequest(r, req, now)
	return err
}
