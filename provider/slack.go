package provider

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
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
// must be answered with its challenge; a slash command's URL is probed
// with ssl_check.
var slackProvider = Provider{
	Name:      "slack",
	Signature: "`X-Slack-Signature` `v0=` + `X-Slack-Request-Timestamp`",
	Docs:      "https://api.slack.com/authentication/verifying-requests-from-slack",
	EventID:   "json:event_id",
	EventType: "json:event.type",
	Tolerance: 5 * time.Minute, // as Slack's SDKs
	Redact:    []string{slackSigHeader},
	Handshake: func(Options) Handshaker { return slackHandshake },
	// Events API: a 2xx within 3 seconds, else a retry "nearly
	// immediately", then after 1 minute and after 5 (api.slack.com/apis/events-api).
	Timeout: 3 * time.Second,
	Retries: Retries{
		Delays: []time.Duration{0, time.Minute, 5 * time.Minute},
		Note:   "3 retries: at once, after 1 minute, after 5 minutes",
	},
	Samples: []Sample{
		{Type: "app_mention", File: "slack/event_callback.json", ID: "Ev08MFMKH6", Resource: "C123ABC456", Key: "json:event.channel", Version: "json:event_time"},
	},
	signer:  prefixedSigner(slackSigHeader, slackTSHeader),
	headers: slackHeaders,
	verifier: func(o Options) (Verifier, error) {
		return &slackVerifier{keys: rawKeys(sha256.New, o.Secrets), tol: o.Tolerance}, nil
	},
}

// slackHandshake answers url_verification with its challenge, and
// ssl_check with an empty 200.
//
// Slack probes a slash command's URL with a form-encoded ssl_check=1 (and a
// deprecated verification token) and wants a 200: it carries no event.
// bolt-js answers it after the signature check, bolt-python before; hookbox
// checks the signature first, as the stricter does, so an unsigned probe is
// refused like any unsigned request.
func slackHandshake(r *location.Request) (Reply, bool) {
	if doc, err := r.JSON(); err == nil {
		m, ok := doc.(map[string]any)
		if !ok || m["type"] != "url_verification" {
			return Reply{}, false
		}
		challenge, _ := m["challenge"].(string)
		return JSONReply(map[string]string{"challenge": challenge}), true
	}
	// A slash command body is form-encoded; only one holding ssl_check is
	// parsed here.
	if !bytes.Contains(r.Body, []byte("ssl_check=")) {
		return Reply{}, false
	}
	form, err := url.ParseQuery(string(r.Body))
	if err != nil || form.Get("ssl_check") != "1" {
		return Reply{}, false
	}
	return Reply{ContentType: "text/plain; charset=utf-8"}, true
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

// slackHeaders: a retry says which one it is and why (fire's retries are
// of a timeout, or of an answer lost).
func slackHeaders(h http.Header, e Event) {
	if e.Attempt > 1 {
		h.Set("X-Slack-Retry-Num", strconv.Itoa(e.Attempt-1))
		h.Set("X-Slack-Retry-Reason", "http_timeout")
	}
}
