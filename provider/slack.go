package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"

	"hookbox/location"
)

const (
	slackSigHeader = "X-Slack-Signature"
	slackTSHeader  = "X-Slack-Request-Timestamp"
)

// slackProvider: Events API requests carry their id and type in the JSON
// body. A new Request URL is first sent a signed url_verification, which
// must be answered with its challenge.
var slackProvider = Provider{
	Name:      "slack",
	EventID:   "json:event_id",
	EventType: "json:event.type",
	Tolerance: 5 * time.Minute, // as Slack's SDKs
	Redact:    []string{slackSigHeader},
	Handshake: func(Options) Handshaker { return slackHandshake },
	verifier: func(o Options) (Verifier, error) {
		return &slackVerifier{keys: rawKeys(sha256.New, o.Secrets), tol: o.Tolerance}, nil
	},
}

// slackHandshake answers url_verification with its challenge.
func slackHandshake(r *location.Request) (Reply, bool) {
	doc, err := r.JSON()
	if err != nil {
		return Reply{}, false
	}
	m, ok := doc.(map[string]any)
	if !ok || m["type"] != "url_verification" {
		return Reply{}, false
	}
	challenge, _ := m["challenge"].(string)
	return JSONReply(map[string]string{"challenge": challenge}), true
}

// slackVerifier checks X-Slack-Signature: v0=<hex of HMAC-SHA256 over
// "v0:<ts>:<body>">, with ts from X-Slack-Request-Timestamp. Slack's SDKs
// reject a timestamp more than the tolerance away in either direction, and
// compare the lower-case hex string, so upper case is rejected here too.
type slackVerifier struct {
	keys []*macKey
	tol  time.Duration
}

func (v *slackVerifier) Verify(h http.Header, body []byte, now time.Time) error {
	sig := h.Get(slackSigHeader)
	if sig == "" {
		return fmt.Errorf("slack: %s: %w", slackSigHeader, ErrMissing)
	}
	ts := h.Get(slackTSHeader)
	if ts == "" {
		return fmt.Errorf("slack: %s: %w", slackTSHeader, ErrMissing)
	}
	t, ok := parseUnix(ts)
	if !ok {
		return fmt.Errorf("slack: %s: not a decimal Unix time: %w", slackTSHeader, ErrMalformed)
	}
	enc, ok := strings.CutPrefix(sig, "v0=")
	if !ok {
		return fmt.Errorf("slack: %s: want prefix \"v0=\": %w", slackSigHeader, ErrMalformed)
	}
	var want [sha256.Size]byte
	if !decodeHex(want[:], enc, true) {
		return fmt.Errorf("slack: %s: not 64 lower-case hex digits: %w", slackSigHeader, ErrMalformed)
	}
	if !fresh(t, now, v.tol, true) {
		return fmt.Errorf("slack: %s: %w", slackTSHeader, ErrTimestamp)
	}
	var mac [maxMAC]byte
	for _, k := range v.keys {
		if hmac.Equal(k.sum(mac[:], body, "v0:", ts, ":"), want[:]) {
			return nil
		}
	}
	return fmt.Errorf("slack: %s: %w", slackSigHeader, ErrMismatch)
}
