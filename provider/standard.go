package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Header names of Standard Webhooks, and of Svix, which the spec grew out of.
var (
	standardHeaders = [3]string{"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature"}
	svixHeaders     = [3]string{"Svix-Id", "Svix-Timestamp", "Svix-Signature"}
)

// standardProvider is Standard Webhooks, and Svix, which the spec grew
// out of. The signed id header is the event id; the type is the JSON
// body's. Secrets are "whsec_" and the base64 of the key.
var standardProvider = Provider{
	Name:      "standard",
	Signature: "`webhook-signature` / `svix-signature` (`v1,` base64, `whsec_` key base64-decoded)",
	Docs:      "https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md",
	EventID:   "header:webhook-id,header:svix-id",
	EventType: "json:type",
	Tolerance: 5 * time.Minute, // the spec's
	Redact:    []string{standardHeaders[2], svixHeaders[2]},
	// The spec leaves the timeout and the schedule to the sender; these are
	// Svix's, the reference sender (docs.svix.com/retries).
	Timeout:     15 * time.Second,
	TimeoutNote: "Svix's: the spec fixes none",
	Retries:     svixRetries,
	Samples: []Sample{
		{Type: "contact.created", File: "standard/contact.created.json", ID: "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", Resource: "1f81eb52-5198-4599-803e-771906343485", Key: "json:data.id", Version: "json:timestamp"},
	},
	signer: standardSigner(&standardHeaders),
	verifier: func(o Options) (Verifier, error) {
		keys := make([]*macKey, len(o.Secrets))
		for i, s := range o.Secrets {
			k, err := decodeWhsec(s)
			if err != nil {
				return nil, fmt.Errorf("signature: standard: secret %d: %w", i+1, err)
			}
			keys[i] = newMACKey(sha256.New, k)
		}
		return &standardVerifier{keys: keys, tol: o.Tolerance}, nil
	},
	secret: func(s string) error {
		_, err := decodeWhsec(s)
		return err
	},
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

// standardVerifier checks Standard Webhooks (and Svix) requests: HMAC-SHA256
// over "<id>.<timestamp>.<body>" keyed with the base64-decoded whsec_ secret,
// sent as a space-separated list of "v1,<base64>" entries of which any may
// match; other versions (v1a is asymmetric) are skipped. The timestamp must be
// within the tolerance in both directions.
type standardVerifier struct {
	keys []*macKey
	tol  time.Duration
}

func (v *standardVerifier) Verify(h http.Header, body []byte, now time.Time) error {
	// The svix-* names are used only when the request has no
	// webhook-signature, so one request never mixes the two sets.
	names := &standardHeaders
	if h.Get(standardHeaders[2]) == "" && h.Get(svixHeaders[2]) != "" {
		names = &svixHeaders
	}
	id, ts, sig := h.Get(names[0]), h.Get(names[1]), h.Get(names[2])
	switch {
	case sig == "":
		return fmt.Errorf("standard: %s: %w", names[2], ErrMissing)
	case id == "":
		return fmt.Errorf("standard: %s: %w", names[0], ErrMissing)
	case ts == "":
		return fmt.Errorf("standard: %s: %w", names[1], ErrMissing)
	}
	// The event id is read from webhook-id, else svix-id: signed with the
	// svix-* set, a webhook-id nobody signed must not stand in for the
	// signed svix-id (one captured request would replay as new events).
	if other := h.Get(standardHeaders[0]); names == &svixHeaders && other != "" && other != id {
		return fmt.Errorf("standard: %s %q differs from the signed %s: %w", standardHeaders[0], other, names[0], ErrMalformed)
	}
	t, ok := parseUnix(ts)
	if !ok {
		return fmt.Errorf("standard: %s: not a decimal Unix time: %w", names[1], ErrMalformed)
	}
	v1, good := 0, 0
	for rest := sig; rest != ""; {
		var entry string
		entry, rest, _ = strings.Cut(rest, " ")
		b64, ok := strings.CutPrefix(entry, "v1,")
		if !ok {
			continue
		}
		v1++
		var s [sha256.Size]byte
		if decodeBase64(s[:], b64) {
			good++
		}
	}
	switch {
	case v1 == 0:
		return fmt.Errorf("standard: %s: no v1 signature: %w", names[2], ErrMalformed)
	case good == 0:
		return fmt.Errorf("standard: %s: no v1 signature is base64 of 32 bytes: %w", names[2], ErrMalformed)
	}
	if !fresh(t, now, v.tol, true) {
		return fmt.Errorf("standard: %s: %w", names[1], ErrTimestamp)
	}
	var mac [maxMAC]byte
	for _, k := range v.keys {
		if standardAnyV1(sig, k.sum(mac[:], body, id, ".", ts, ".")) {
			return nil
		}
	}
	return fmt.Errorf("standard: %s: %w", names[2], ErrMismatch)
}

// standardAnyV1 reports whether any well-formed v1 entry of sig equals mac.
func standardAnyV1(sig string, mac []byte) bool {
	for rest := sig; rest != ""; {
		var entry string
		entry, rest, _ = strings.Cut(rest, " ")
		b64, ok := strings.CutPrefix(entry, "v1,")
		if !ok {
			continue
		}
		var s [sha256.Size]byte
		if decodeBase64(s[:], b64) && hmac.Equal(s[:], mac) {
			return true
		}
	}
	return false
}

// standardSigner signs as a Standard Webhooks sender does, under the
// header names given (Svix's svix-* for Clerk and Resend): the id header,
// which SetHeaders set, the timestamp and one v1 signature.
func standardSigner(names *[3]string) func(Options) (*Signer, error) {
	return func(o Options) (*Signer, error) {
		s, err := NewStandardSigner(o.Secrets[:1])
		if err != nil {
			return nil, err
		}
		return signs(func(r *Request, now time.Time) error {
			id := r.Header.Get(names[0])
			if id == "" {
				return fmt.Errorf("%s, the signed message id, is not set: %w", names[0], ErrMissing)
			}
			ts, sig := s.Sign(id, now, r.Body)
			r.Header.Set(names[1], ts)
			r.Header.Set(names[2], sig)
			return nil
		})
	}
}

// svixHeader: Svix sends the message id as svix-id, beside which
// SetHeaders' webhook-id (the first place the preset reads) would be an
// unsigned second id: a Svix-delivered preset (clerk, resend) sends
// svix-id alone.
func svixHeader(h http.Header, _ Event) {
	if id := h.Get(standardHeaders[0]); id != "" {
		h.Del(standardHeaders[0])
		h.Set(svixHeaders[0], id)
	}
}

// svixRetries is the schedule of Svix, which delivers the standard,
// clerk and resend webhooks: each period starts at the failure of the
// attempt before (docs.svix.com/retries).
var svixRetries = Retries{
	Delays: []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour},
	Note:   "Svix's: after 5 seconds, 5 minutes, 30 minutes, 2 hours, 5 hours, 10 hours and 10 hours",
}
