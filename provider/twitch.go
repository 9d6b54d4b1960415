package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"hookbox/location"
)

const (
	twitchIDHeader   = "Twitch-Eventsub-Message-Id"
	twitchTSHeader   = "Twitch-Eventsub-Message-Timestamp"
	twitchSigHeader  = "Twitch-Eventsub-Message-Signature"
	twitchTypeHeader = "Twitch-Eventsub-Message-Type"
)

// twitchProvider is EventSub over webhooks: Twitch-Eventsub-Message-Signature
// is "sha256=" + hex of HMAC-SHA256, keyed with the subscription's secret,
// over the message id, the timestamp (RFC 3339, as sent) and the body,
// concatenated, as Twitch's "Handling webhook events" documentation
// computes it; its sample compares the lower-case hex string. The page has
// a message older than 10 minutes refused and says nothing of the future,
// so only the past is bounded. A message is one of three types
// (Twitch-Eventsub-Message-Type): a webhook_callback_verification, sent
// when a subscription is created, is answered with its raw challenge as
// text/plain and not stored; a notification and a revocation (Twitch
// ended the subscription) are events. The id is the message id, the same
// in every retry; the type is the subscription's (the message type header
// is stored with the event and tells a revocation from a notification).
var twitchProvider = Provider{
	Name:      "twitch",
	Signature: "`Twitch-Eventsub-Message-Signature` `sha256=` (hex HMAC-SHA256 of message id + timestamp + body); answers `webhook_callback_verification`",
	Docs:      "https://dev.twitch.tv/docs/eventsub/handling-webhook-events/",
	EventID:   "header:" + twitchIDHeader,
	EventType: "header:Twitch-Eventsub-Subscription-Type",
	Tolerance: 10 * time.Minute,
	Redact:    []string{twitchSigHeader},
	Handshake: func(Options) Handshaker { return twitchHandshake },
	// "within a few seconds", no number; retries with backoff, unpublished.
	TimeoutNote: "not published (\"a few seconds\")",
	Retries:     genericRetries,
	Samples: []Sample{
		{Type: "channel.follow", File: "twitch/channel.follow.json", ID: "e76c6bd4-55c9-4987-8304-da1588d8988b", Resource: "13370042", Key: "json:event.broadcaster_user_id", Version: "json:event.followed_at"},
	},
	signer:  twitchSigner,
	headers: twitchHeaders,
	verifier: func(o Options) (Verifier, error) {
		return &twitchVerifier{keys: rawKeys(sha256.New, o.Secrets), tol: o.Tolerance}, nil
	},
}

type twitchVerifier struct {
	keys []*macKey
	tol  time.Duration
}

func (v *twitchVerifier) Verify(h http.Header, body []byte, now time.Time) error {
	sig := h.Get(twitchSigHeader)
	switch {
	case sig == "":
		return fmt.Errorf("twitch: %s: %w", twitchSigHeader, ErrMissing)
	case h.Get(twitchIDHeader) == "":
		return fmt.Errorf("twitch: %s: %w", twitchIDHeader, ErrMissing)
	case h.Get(twitchTSHeader) == "":
		return fmt.Errorf("twitch: %s: %w", twitchTSHeader, ErrMissing)
	}
	id, ts := h.Get(twitchIDHeader), h.Get(twitchTSHeader)
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return fmt.Errorf("twitch: %s: not an RFC 3339 time: %w", twitchTSHeader, ErrMalformed)
	}
	enc, ok := strings.CutPrefix(sig, "sha256=")
	if !ok {
		return fmt.Errorf("twitch: %s: want prefix \"sha256=\": %w", twitchSigHeader, ErrMalformed)
	}
	var want [sha256.Size]byte
	if !decodeHex(want[:], enc, true) {
		return fmt.Errorf("twitch: %s: not 64 lower-case hex digits: %w", twitchSigHeader, ErrMalformed)
	}
	if now.Sub(t) > v.tol {
		return fmt.Errorf("twitch: %s: %w", twitchTSHeader, ErrTimestamp)
	}
	var mac [maxMAC]byte
	for _, k := range v.keys {
		if hmac.Equal(k.sum(mac[:], body, id, ts), want[:]) {
			return nil
		}
	}
	return fmt.Errorf("twitch: %s: %w", twitchSigHeader, ErrMismatch)
}

// twitchHandshake answers webhook_callback_verification with its
// challenge, raw.
func twitchHandshake(r *location.Request) (Reply, bool) {
	if r.Header.Get(twitchTypeHeader) != "webhook_callback_verification" {
		return Reply{}, false
	}
	doc, err := r.JSON()
	if err != nil {
		return Reply{}, false
	}
	m, _ := doc.(map[string]any)
	challenge, ok := m["challenge"].(string)
	if !ok {
		return Reply{}, false
	}
	return Reply{ContentType: "text/plain; charset=utf-8", Body: []byte(challenge)}, true
}

// twitchSigner signs the message id SetHeaders set, an RFC 3339
// timestamp with nanoseconds, as Twitch sends it, and the body.
func twitchSigner(o Options) (*Signer, error) {
	key := []byte(o.Secrets[0])
	return signs(func(r *Request, now time.Time) error {
		id := r.Header.Get(twitchIDHeader)
		if id == "" {
			return fmt.Errorf("%s, the signed message id, is not set: %w", twitchIDHeader, ErrMissing)
		}
		ts := now.UTC().Format(time.RFC3339Nano)
		r.Header.Set(twitchTSHeader, ts)
		r.Header.Set(twitchSigHeader, "sha256="+hexMAC(hmacOf(sha256.New, key, []byte(id+ts), r.Body)))
		return nil
	})
}

// twitchHeaders: a notification's message type, and the retry count
// Twitch-Eventsub-Message-Retry carries (0 on the first attempt).
func twitchHeaders(h http.Header, e Event) {
	h.Set(twitchTypeHeader, "notification")
	h.Set("Twitch-Eventsub-Message-Retry", strconv.Itoa(max(e.Attempt-1, 0)))
}
