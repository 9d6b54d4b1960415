package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	"hookbox/location"
)

const (
	zoomSigHeader = "X-Zm-Signature"
	zoomTSHeader  = "X-Zm-Request-Timestamp"
)

// zoomProvider: x-zm-signature is "v0=" + hex of HMAC-SHA256, keyed with
// the app's secret token, over "v0:<x-zm-request-timestamp>:<body>", as
// Zoom's "Verify webhook events" documentation, its webhook-sample and its
// Rivet library compute it (Rivet compares the lower-case hex string, so
// upper case is refused). A new endpoint URL is validated with a signed
// endpoint.url_validation, answered with its plainToken and the hex of
// HMAC-SHA256(secret token, plainToken) as encryptedToken, and never
// stored: the reply uses the secret that signed the request, so a secret
// being rotated answers correctly too.
//
// Zoom's bodies carry no event id: a retry repeats the same bytes (event,
// event_ts and payload), so the id is the body's hash, and the type is
// its event.
//
// Tolerance: Zoom documents no window and neither its sample nor Rivet
// checks the timestamp. It retries a failed delivery 5, 25 and 85 minutes
// after the first, without saying whether a retry is signed anew, so the
// default window covers them: 2 hours, in both directions (the stricter
// check, for want of an SDK that makes one); a copy within it is a
// duplicate of the same bytes. The timestamp is in seconds; one of 10^11
// or more is taken as milliseconds.
var zoomProvider = Provider{
	Name:      "zoom",
	Signature: "`x-zm-signature` `v0=` (hex HMAC-SHA256 of `v0:<x-zm-request-timestamp>:<body>`); answers `endpoint.url_validation`",
	Docs:      "https://developers.zoom.us/docs/api/webhooks/",
	EventID:   "body-sha256",
	EventType: "json:event",
	Tolerance: 2 * time.Hour,
	Redact:    []string{zoomSigHeader},
	Handshake: func(o Options) Handshaker { return zoomHandshake(rawKeys(sha256.New, o.Secrets)) },
	// A 200 or 204 within 3 seconds, else 3 retries: 5 minutes after the
	// first attempt, 20 minutes after that, 60 after that (Resolving webhook
	// delays).
	Timeout: 3 * time.Second,
	Retries: Retries{
		Delays: []time.Duration{5 * time.Minute, 20 * time.Minute, 60 * time.Minute},
		Note:   "3 retries: after 5, 20 and 60 minutes",
	},
	Samples: []Sample{
		{Type: "meeting.started", File: "zoom/meeting.started.json", ID: "Xk3nW8sZQ2uUbZk6Nq7Ecg", Resource: "85746065432", Key: "json:payload.object.id", Version: "json:event_ts"},
	},
	signer: prefixedSigner(zoomSigHeader, zoomTSHeader),
	verifier: func(o Options) (Verifier, error) {
		return &zoomVerifier{keys: rawKeys(sha256.New, o.Secrets), tol: o.Tolerance}, nil
	},
}

type zoomVerifier struct {
	keys []*macKey
	tol  time.Duration
}

func (v *zoomVerifier) Verify(h http.Header, body []byte, now time.Time) error {
	want, ts, err := zoomSignature(h)
	if err != nil {
		return err
	}
	t, _ := parseUnix(ts) // zoomSignature checked it
	if t >= 1e11 {
		t /= 1000
	}
	if !fresh(t, now, v.tol, true) {
		return fmt.Errorf("zoom: %s: %w", zoomTSHeader, ErrTimestamp)
	}
	if zoomKey(v.keys, want, ts, body) == nil {
		return fmt.Errorf("zoom: %s: %w", zoomSigHeader, ErrMismatch)
	}
	return nil
}

// zoomSignature reads the signature and the timestamp of a request.
func zoomSignature(h http.Header) (want [sha256.Size]byte, ts string, err error) {
	sig := h.Get(zoomSigHeader)
	if sig == "" {
		return want, "", fmt.Errorf("zoom: %s: %w", zoomSigHeader, ErrMissing)
	}
	if ts = h.Get(zoomTSHeader); ts == "" {
		return want, "", fmt.Errorf("zoom: %s: %w", zoomTSHeader, ErrMissing)
	}
	if _, ok := parseUnix(ts); !ok {
		return want, "", fmt.Errorf("zoom: %s: not a decimal Unix time: %w", zoomTSHeader, ErrMalformed)
	}
	enc, ok := strings.CutPrefix(sig, "v0=")
	if !ok {
		return want, "", fmt.Errorf("zoom: %s: want prefix \"v0=\": %w", zoomSigHeader, ErrMalformed)
	}
	if !decodeHex(want[:], enc, true) {
		return want, "", fmt.Errorf("zoom: %s: not 64 lower-case hex digits: %w", zoomSigHeader, ErrMalformed)
	}
	return want, ts, nil
}

// zoomKey returns the key among keys that signed body at ts, or nil.
func zoomKey(keys []*macKey, want [sha256.Size]byte, ts string, body []byte) *macKey {
	var mac [maxMAC]byte
	for _, k := range keys {
		if hmac.Equal(k.sum(mac[:], body, "v0:", ts, ":"), want[:]) {
			return k
		}
	}
	return nil
}

// zoomHandshake answers endpoint.url_validation, keyed with the secret
// that signed it.
func zoomHandshake(keys []*macKey) Handshaker {
	return func(r *location.Request) (Reply, bool) {
		doc, err := r.JSON()
		if err != nil {
			return Reply{}, false
		}
		m, _ := doc.(map[string]any)
		payload, _ := m["payload"].(map[string]any)
		plain, isString := payload["plainToken"].(string)
		if m["event"] != "endpoint.url_validation" || !isString {
			return Reply{}, false
		}
		key := keys[0]
		if want, ts, err := zoomSignature(r.Header); err == nil {
			if k := zoomKey(keys, want, ts, r.Body); k != nil {
				key = k
			}
		}
		var mac [maxMAC]byte
		return JSONReply(map[string]string{
			"plainToken":     plain,
			"encryptedToken": hex.EncodeToString(key.sum(mac[:], []byte(plain))),
		}), true
	}
}
