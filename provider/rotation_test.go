package provider_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"hookbox/provider"
)

// otherSecrets are two secrets of p's format that did not sign rt's
// requests.
func otherSecrets(t *testing.T, p provider.Provider, rt roundTrip) [2]string {
	t.Helper()
	var out [2]string
	switch {
	case p.Name == "discord":
		out = [2]string{discordPublic[1], discordPublic[2]}
	case p.Name == "sendgrid":
		for i := range out {
			k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			pub, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
			out[i] = base64.StdEncoding.EncodeToString(pub)
		}
	case strings.HasPrefix(rt.vrfy, "whsec_") && p.CheckSecret(stdSecrets[1]) == nil:
		out = [2]string{stdSecrets[1], stdSecrets[2]}
	default:
		out = [2]string{rt.vrfy + "-other1", rt.vrfy + "-other2"}
	}
	for _, s := range out {
		if err := p.CheckSecret(s); err != nil {
			t.Fatalf("other secret: %v", err)
		}
	}
	return out
}

// Every signed scheme, its request signed with one secret of a rotation of
// three, says which: the signer's place in the list, whatever it is; a
// request none of them signed is refused, naming no secret.
func TestCheck_WhichSecret(t *testing.T) {
	rts := roundTrips(t)
	now := time.Now().Truncate(time.Second)
	for _, p := range provider.All() {
		if p.Unsigned {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			rt := rts[p.Name]
			other := otherSecrets(t, p, rt)
			s := p.Samples[0]
			r := signedSample(t, p, rt, s, s.ID, s.Resource, now)
			for at := range 3 {
				secrets := slices.Insert([]string{other[0], other[1]}, at, rt.vrfy)
				o := rt.o
				o.Secrets = secrets
				m, err := check(t, mustNew(t, o), r, now)
				if err != nil {
					t.Fatalf("signed with secret %d of %v: %v", at+1, len(secrets), err)
				}
				if want := (provider.Match{Secret: at, Of: 3}); m != want {
					t.Errorf("signed with secret %d of 3: %+v (%s), want %+v", at+1, m, m, want)
				}
				if got, want := m.String(), []string{"secret 1 of 3", "secret 2 of 3", "secret 3 of 3"}[at]; got != want {
					t.Errorf("String() = %q, want %q", got, want)
				}
			}
			// One secret: secret 1 of 1.
			o := rt.o
			o.Secrets = []string{rt.vrfy}
			if m, err := check(t, mustNew(t, o), r, now); err != nil || m != (provider.Match{Secret: 0, Of: 1}) {
				t.Errorf("one secret: %+v, %v; want secret 1 of 1", m, err)
			}
			// None of them signed it.
			o.Secrets = other[:]
			m, err := check(t, mustNew(t, o), r, now)
			if !errors.Is(err, provider.ErrMismatch) || m.Verified() {
				t.Errorf("signed with none of the secrets: %+v, %v; want ErrMismatch", m, err)
			}
			checkErr(t, err, rt.vrfy, other[0], other[1])
		})
	}
}

// check verifies r as the receiver does, saying which secret matched.
func check(t *testing.T, v provider.Verifier, r *provider.Request, now time.Time) (provider.Match, error) {
	t.Helper()
	if rv, ok := v.(provider.RequestVerifier); ok {
		return provider.CheckRequest(rv, r, now)
	}
	return provider.Check(v, r.Header, r.Body, now)
}

// The none scheme checks no secret: no match to tell.
func TestCheck_None(t *testing.T) {
	v := mustNew(t, provider.Options{Scheme: "none"})
	m, err := provider.Check(v, nil, nil, time.Now())
	if err != nil || m.Verified() || m.String() != "" {
		t.Fatalf("none: %+v %q, %v; want no match and no error", m, m, err)
	}
}

// A request malformed for the scheme is refused for that, with the rotation
// as without: its fault is not the secrets'.
func TestCheck_RotationKeepsTheError(t *testing.T) {
	now := time.Unix(1700000000, 0)
	body := []byte(`{"id":"evt_1"}`)
	for _, f := range fixtures() {
		t.Run(f.name, func(t *testing.T) {
			one := mustNew(t, withSecrets(f.opts, f.secrets[0]))
			two := mustNew(t, withSecrets(f.opts, f.secrets[0], f.secrets[1]))
			h, _ := f.sign(t, f.secrets[2], body, now)
			for name, hdr := range map[string]map[string][]string{"unsigned": {}, "signed by another": h} {
				e1 := one.Verify(hdr, body, now)
				_, e2 := provider.Check(two, hdr, body, now)
				if e1 == nil || e2 == nil || e1.Error() != e2.Error() {
					t.Errorf("%s: one secret %v, two %v; want the same refusal", name, e1, e2)
				}
			}
		})
	}
}

// One rotation's verifier, its requests signed by its secrets in turn
// (it tries the latest match first), says each time which signed.
func TestCheck_SecretsInTurn(t *testing.T) {
	now := time.Unix(1700000000, 0)
	body := []byte(`{"id":"evt_turns"}`)
	for _, f := range fixtures() {
		t.Run(f.name, func(t *testing.T) {
			v := mustNew(t, withSecrets(f.opts, f.secrets[:]...))
			for _, at := range []int{2, 2, 0, 1, 1, 2, 0, 0} {
				h, _ := f.sign(t, f.secrets[at], body, now)
				m, err := provider.Check(v, h, body, now)
				if err != nil || m != (provider.Match{Secret: at, Of: 3}) {
					t.Fatalf("signed with secret %d of 3: %+v, %v", at+1, m, err)
				}
			}
			if f.name == "standard" || f.name == "discord" {
				return // their secrets have a format: the mismatch is TestVerify_Rotation's
			}
			h, _ := f.sign(t, "never-configured-secret", body, now)
			if _, err := provider.Check(v, h, body, now); !errors.Is(err, provider.ErrMismatch) {
				t.Errorf("signed with another secret: %v, want ErrMismatch", err)
			}
		})
	}
}
