package provider

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"hookbox/location"
	"net/http"
	"time"
)

const notionHeader = "X-Notion-Signature"

// notionProvider is Notion's integration webhooks
// (developers.notion.com/reference/webhooks).
//
// X-Notion-Signature is "sha256=" and the lower-case hex of HMAC-SHA256
// over the raw body, keyed with the subscription's verification_token:
// that token is the secret. No timestamp is signed; the body's "id" is the
// event's and stays the same on a retry, while its attempt_number counts
// up, so the bytes differ between attempts and json:id is the one to
// dedupe on. "type" is page.created, comment.created, ….
//
// The token reaches the endpoint once, before anything is signed with it:
// creating a subscription makes Notion POST {"verification_token": "…"},
// unsigned, and the developer pastes the token into the integration's
// Verify dialog: the proof is the pasted token, not the answer, and the
// request is not an event. hookbox cannot know the token before that request, and
// never writes a secret to its log, so the README's setup captures it with
// a source of verify = "none" first. Once the token is the source's
// secret, a verification request (Notion's "Resend token") carrying it is
// accepted without a signature, since holding the token is all it can
// prove, and the handshake answers it and stores nothing; one carrying any
// other token is refused. A signed request that carries a
// verification_token is answered the same way.
var notionProvider = Provider{
	Name:      "notion",
	Signature: "`X-Notion-Signature` (`sha256=` hex, keyed with the subscription's `verification_token`; no timestamp; the verification request is answered, never stored)",
	Docs:      "https://developers.notion.com/reference/webhooks",
	EventID:   "json:id",
	EventType: "json:type",
	// Order: the entity's id and the event's timestamp (RFC 3339).
	OrderKey:     "json:entity.id",
	OrderVersion: "json:timestamp",
	OrderDocs:    "https://developers.notion.com/reference/webhooks-events-delivery",
	Redact:       []string{notionHeader},
	Handshake:    func(Options) Handshaker { return notionHandshake },
	TimeoutNote:  "not published",
	Retries:      genericRetries,
	Samples: []Sample{
		{Type: "page.content_updated", File: "notion/page.content_updated.json", ID: "367cba44-b6f3-4c92-81e7-6a2e9659efd4", Resource: "153104cd-477e-809d-8dc4-ff2d96ae3090", Key: "json:entity.id", Version: "json:timestamp"},
	},
	signer: bodySigner(notionHeader, "sha256=", sha256.New, hexMAC),
	verifier: func(o Options) (Verifier, error) {
		v := &notionVerifier{signed: hmacVerifier{
			scheme: "notion", header: notionHeader, prefix: "sha256=",
			size: sha256.Size, lowerHex: true, keys: rawKeys(sha256.New, o.Secrets),
		}}
		for _, s := range o.Secrets {
			v.tokens = append(v.tokens, sha256.Sum256([]byte(s)))
		}
		return v, nil
	},
}

// notionHandshake answers a request carrying a verification_token, which
// the verifier let through only if it was signed or its token is a
// configured secret. The test is notionVerificationToken's, on the
// receiver's decoding of the same bytes (both with encoding/json: one
// object, keys exact, the last of repeated keys winning).
func notionHandshake(r *location.Request) (Reply, bool) {
	doc, err := r.JSON()
	if err != nil {
		return Reply{}, false
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return Reply{}, false
	}
	if tok, ok := m["verification_token"].(string); !ok || tok == "" {
		return Reply{}, false
	}
	return JSONReply(map[string]string{"status": "verification received"}), true
}

// notionVerifier checks X-Notion-Signature, or, on a request without one,
// the verification_token of Notion's verification request.
type notionVerifier struct {
	signed hmacVerifier
	// Digests of the secrets, compared in constant time with the digest of
	// a verification_token (which hides the secrets' lengths too).
	tokens [][sha256.Size]byte
}

func (v *notionVerifier) Verify(h http.Header, body []byte, now time.Time) error {
	if h.Get(notionHeader) != "" {
		return v.signed.Verify(h, body, now)
	}
	tok, ok := notionVerificationToken(body)
	if !ok {
		return fmt.Errorf("notion: %s: %w", notionHeader, ErrMissing)
	}
	got := sha256.Sum256([]byte(tok))
	match := 0
	for i := range v.tokens {
		match |= subtle.ConstantTimeCompare(got[:], v.tokens[i][:])
	}
	if match != 1 {
		return fmt.Errorf("notion: unsigned verification_token: %w", ErrMismatch)
	}
	return nil
}

// notionVerificationToken returns the verification_token of a body that is
// one JSON object holding a non-empty string under that key.
func notionVerificationToken(body []byte) (string, bool) {
	// Checked before decoding: an event body is larger than the verification
	// request and never holds the key, so the common case costs a scan.
	if !bytes.Contains(body, []byte(`"verification_token"`)) {
		return "", false
	}
	var doc map[string]json.RawMessage
	if !decodeOne(body, &doc) {
		return "", false
	}
	var tok string
	if err := json.Unmarshal(doc["verification_token"], &tok); err != nil || tok == "" {
		return "", false
	}
	return tok, true
}
