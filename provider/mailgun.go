package provider

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// mailgunProvider is Mailgun's event webhooks, as JSON
// (documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks;
// mailgun-go's VerifyWebhookSignature, mailgun-php's
// Webhook::verifyWebhookSignature).
//
// The signature travels in the body: {"signature": {"timestamp": "…",
// "token": "…", "signature": "…"}, "event-data": {…}}, where signature is
// the lower-case hex of HMAC-SHA256 over timestamp and token concatenated,
// keyed with the domain's HTTP webhook signing key. An event of a
// subaccount's domain also carries parent-signature, the same HMAC under
// the primary account's key, so that one key verifies every subaccount:
// either may match. Only timestamp and token are signed: event-data is
// not, so whoever holds one signed body can attach its signature to other
// event data. The SDKs disagree on case: mailgun-go decodes the hex
// (either case), mailgun-php compares the lower-case string; hookbox takes
// the stricter, lower case only. Every listed key is tried, for a
// rotation. The form-encoded webhooks of Mailgun's legacy API are not
// supported.
//
// Mailgun recommends refusing a second request with a token already seen,
// against replays. The preset's event id is that token, so hookbox's
// dedupe is exactly that cache: a request whose token was seen is a
// duplicate and runs nothing, whatever event data it carries. A retry
// carries the first attempt's signature block (Mailgun's docs do not say;
// Hookdeck's Mailgun reference does), so Mailgun's retries are duplicates
// too. event-data.id, the event's own id, would let a copied signature
// carry new event data under a new id: set event_id = "json:event-data.id"
// only where that does not matter. The type is event-data.event
// (delivered, opened, failed, …).
//
// The docs make a timestamp check optional and name no bound; neither SDK
// checks one. Since a retry carries the first attempt's timestamp and
// Mailgun retries for about 8 hours (10 min, 10 min, 15 min, 30 min, 1 h,
// 2 h, 4 h), a bound of minutes would refuse Mailgun's own retries after an
// outage: the default is 24 hours, which no retry reaches and which still
// refuses a copy kept for later. It is checked both ways, which also
// closes a gap of the scheme: timestamp and token are concatenated with
// nothing between them, so a digit moved from one to the other keeps the
// signature and changes the token, and leaves a timestamp a tenth or ten
// times the signed one.
var mailgunProvider = Provider{
	Name:      "mailgun",
	Signature: "the JSON body's `signature` object (hex HMAC-SHA256 of `timestamp` and `token`, the webhook signing key; also `parent-signature`)",
	Docs:      "https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks",
	EventID:   "json:signature.token",
	EventType: "json:event-data.event",
	Tolerance: 24 * time.Hour,
	// Mailgun sends no signature header: the signature is in the body,
	// stored as received, and the token dedupe above is what keeps a stored
	// one from being replayed. A webhook URL with user:password@ sends
	// Authorization, the one credential header a Mailgun request can carry.
	Redact:      []string{"Authorization"},
	TimeoutNote: "not published",
	Retries: Retries{
		Delays: []time.Duration{10 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour},
		Note:   "for 8 hours: after 10, 10, 15 and 30 minutes, then 1, 2 and 4 hours",
	},
	Samples: []Sample{
		{Type: "delivered", File: "mailgun/delivered.json", ID: "a8ce0edb2dd8301dee6c2405235584e45aa91d1e9f979f3de0", Resource: "20130503182626.18666.16540", Key: "json:event-data.message.headers.message-id", Version: "json:event-data.timestamp"},
	},
	signer: mailgunSigner,
	verifier: func(o Options) (Verifier, error) {
		return &mailgunVerifier{keys: rawKeys(sha256.New, o.Secrets), tol: o.Tolerance}, nil
	},
}

// mailgunVerifier checks the signature object of a Mailgun JSON body.
type mailgunVerifier struct {
	keys []*macKey
	tol  time.Duration
}

// mailgunMaxToken bounds the token: Mailgun's are 50 characters, and a
// hostile one must not make the HMAC input large.
const mailgunMaxToken = 256

func (v *mailgunVerifier) Verify(_ http.Header, body []byte, now time.Time) error {
	ts, token, sig, parent, err := mailgunSignature(body)
	if err != nil {
		return err
	}
	t, ok := parseUnix(ts)
	if !ok {
		return fmt.Errorf("mailgun: signature.timestamp: not a decimal Unix time: %w", ErrMalformed)
	}
	if len(token) > mailgunMaxToken {
		return fmt.Errorf("mailgun: signature.token: longer than %d bytes: %w", mailgunMaxToken, ErrMalformed)
	}
	var want [sha256.Size]byte
	if !decodeHex(want[:], sig, true) {
		return fmt.Errorf("mailgun: signature.signature: not 64 lower-case hex digits: %w", ErrMalformed)
	}
	if !fresh(t, now, v.tol, true) {
		return fmt.Errorf("mailgun: signature.timestamp: %w", ErrTimestamp)
	}
	// A parent-signature that is not 64 hex digits cannot match; the
	// signature alone decides then.
	var wantParent [sha256.Size]byte
	hasParent := decodeHex(wantParent[:], parent, true)
	var mac [maxMAC]byte
	for _, k := range v.keys {
		got := k.sum(mac[:], nil, ts, token)
		if hmac.Equal(got, want[:]) || hasParent && hmac.Equal(got, wantParent[:]) {
			return nil
		}
	}
	return fmt.Errorf("mailgun: signature: %w", ErrMismatch)
}

// mailgunSignature returns the fields of the body's signature object,
// parent-signature "" when it has none. The body is decoded as the receiver decodes it for the event id
// (one JSON value, keys matched exactly, the last of repeated keys
// winning), so the token checked here is the token the id is read from.
func mailgunSignature(body []byte) (ts, token, sig, parent string, err error) {
	var doc map[string]json.RawMessage
	if !decodeOne(body, &doc) {
		return "", "", "", "", fmt.Errorf("mailgun: body is not a JSON object (the legacy form-encoded webhooks are not supported): %w", ErrMalformed)
	}
	raw, ok := doc["signature"]
	if !ok || bytes.Equal(raw, []byte("null")) {
		return "", "", "", "", fmt.Errorf("mailgun: signature: %w", ErrMissing)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return "", "", "", "", fmt.Errorf("mailgun: signature: not an object: %w", ErrMalformed)
	}
	for _, f := range [...]struct {
		name string
		dst  *string
	}{{"timestamp", &ts}, {"token", &token}, {"signature", &sig}} {
		raw, ok := fields[f.name]
		if !ok {
			return "", "", "", "", fmt.Errorf("mailgun: signature.%s: %w", f.name, ErrMissing)
		}
		if !jsonText(raw, f.dst) || *f.dst == "" {
			return "", "", "", "", fmt.Errorf("mailgun: signature.%s: not a non-empty string: %w", f.name, ErrMalformed)
		}
	}
	if raw, ok := fields["parent-signature"]; ok && !jsonText(raw, &parent) {
		parent = ""
	}
	return ts, token, sig, parent, nil
}

// jsonText stores a JSON string's value in dst; an integer (a timestamp
// sent as a number) is taken as its digits, which are what was signed.
func jsonText(raw json.RawMessage, dst *string) bool {
	if len(raw) > 0 && raw[0] == '"' {
		return json.Unmarshal(raw, dst) == nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return false
	}
	*dst = n.String()
	return true
}

// decodeOne decodes body, which must be exactly one JSON value, into v:
// the receiver refuses a body with data after its first value too, so a
// verifier that reads the body and the receiver that reads its event id
// see the same document.
func decodeOne(body []byte, v any) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return false
	}
	_, err := dec.Token()
	return errors.Is(err, io.EOF)
}

// mailgunSigner fills in the body's signature object: its timestamp and
// token as the body has them, so that every attempt of an event carries
// the first attempt's block as Mailgun's retries do (a timestamp missing
// is the time of sending, a token missing one made from the body's hash,
// so the same body gets the same token), and their signature. The object
// is written {"timestamp","token","signature"}, every other byte of the
// body kept.
func mailgunSigner(o Options) (*Signer, error) {
	key := []byte(o.Secrets[0])
	return signs(func(r *Request, now time.Time) error {
		var doc map[string]json.RawMessage
		if !decodeOne(r.Body, &doc) || doc == nil {
			return errNotObject
		}
		var fields map[string]json.RawMessage
		_ = json.Unmarshal(doc["signature"], &fields)
		var ts, token string
		jsonText(fields["timestamp"], &ts)
		jsonText(fields["token"], &token)
		if ts == "" {
			ts = unix(now)
		}
		if token == "" {
			sum := sha256.Sum256(r.Body)
			token = hex.EncodeToString(sum[:])[:50]
		}
		block, err := json.Marshal(struct {
			Timestamp string `json:"timestamp"`
			Token     string `json:"token"`
			Signature string `json:"signature"`
		}{ts, token, hexMAC(hmacOf(sha256.New, key, []byte(ts+token)))})
		if err != nil {
			return err
		}
		body, err := setMember(r.Body, "signature", block)
		if err != nil {
			return err
		}
		r.Body = body
		return nil
	})
}
