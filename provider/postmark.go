package provider

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// postmarkProvider is Postmark's webhooks
// (postmarkapp.com/developer/webhooks/webhooks-overview, "Protecting your
// webhook").
//
// Postmark signs nothing. It documents basic HTTP authentication, put in
// the webhook URL (https://user:password@host/hooks/postmark) or in the
// webhook's HttpAuth, and sends it as Authorization: Basic
// base64(user:password). The preset checks that credential: a secret is
// "user:password", exactly as in the URL, and the header's, once decoded,
// must equal one of them, compared in constant time. Like gitlab and
// token, this proves the sender knows the credential, nothing about the
// body. (Postmark can also send custom headers; verify = "token" with
// header = the header's name checks one of those instead.)
//
// Postmark's payloads carry no id of the notification: MessageID names the
// message, and a message has a Delivery, then an Open for each opening and
// a Click for each click, all with the same MessageID (a Bounce's ID and
// an inbound message's MessageID are one-per-event, but only for those
// record types). So the id is the body's SHA-256: a payload holds no
// attempt count or send time, so a retry is the same bytes, while two
// events of one message differ in their RecordType or their time
// (ReceivedAt, DeliveredAt, BouncedAt, …). The
// type is RecordType (Delivery, Bounce, SpamComplaint, Open, Click,
// SubscriptionChange); an inbound message has none and is stored untyped.
var postmarkProvider = Provider{
	Name:          "postmark",
	Signature:     "`Authorization: Basic` equals a `user:password` secret (Postmark signs nothing)",
	Docs:          "https://postmarkapp.com/developer/webhooks/webhooks-overview",
	EventID:       "body-sha256",
	EventType:     "json:RecordType",
	Redact:        []string{"Authorization"},
	SecretExample: "postmark:example-password",
	// Retries, for a webhook Postmark could not deliver: 1, 5, 10, 10, 10,
	// 15 and 30 minutes, then 1, 2 and 6 hours.
	TimeoutNote: "not published",
	Retries: Retries{
		Delays: []time.Duration{time.Minute, 5 * time.Minute, 10 * time.Minute, 10 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 6 * time.Hour},
		Note:   "10 retries: after 1, 5, 10, 10, 10, 15 and 30 minutes, then 1, 2 and 6 hours",
	},
	Samples: []Sample{
		{Type: "Delivery", File: "postmark/Delivery.json", ID: "00000000-0000-0000-0000-000000000000", Resource: "883953f4-6105-42a2-a16a-77a8eac79483", Key: "json:MessageID", Version: "json:DeliveredAt"},
	},
	signer: postmarkSigner,
	verifier: func(o Options) (Verifier, error) {
		v := &postmarkVerifier{}
		for i, s := range o.Secrets {
			if err := postmarkSecret(s); err != nil {
				return nil, fmt.Errorf("signature: postmark: secret %d: %w", i+1, err)
			}
			v.digests = append(v.digests, sha256.Sum256([]byte(s)))
		}
		return v, nil
	},
	secret: postmarkSecret,
}

// postmarkSecret checks that a secret is user:password.
func postmarkSecret(s string) error {
	if user, _, ok := strings.Cut(s, ":"); !ok || user == "" {
		return errors.New(`want "user:password", the credentials of the webhook URL https://user:password@host/…`)
	}
	return nil
}

// postmarkVerifier checks Authorization: Basic against user:password
// secrets.
type postmarkVerifier struct {
	digests [][sha256.Size]byte // of the secrets, as tokenVerifier keeps them
}

// postmarkMaxAuth bounds the header decoded: a credential is short.
const postmarkMaxAuth = 4096

func (v *postmarkVerifier) Verify(h http.Header, _ []byte, _ time.Time) error {
	auth := h.Get("Authorization")
	if auth == "" {
		return fmt.Errorf("postmark: Authorization: %w", ErrMissing)
	}
	// RFC 7617: the scheme name is case-insensitive.
	scheme, b64, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return fmt.Errorf("postmark: Authorization: want Basic credentials: %w", ErrMalformed)
	}
	b64 = strings.TrimSpace(b64)
	if len(b64) > postmarkMaxAuth {
		return fmt.Errorf("postmark: Authorization: longer than %d bytes: %w", postmarkMaxAuth, ErrMalformed)
	}
	cred, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return fmt.Errorf("postmark: Authorization: not base64: %w", ErrMalformed)
	}
	got := sha256.Sum256(cred)
	match := 0
	for i := range v.digests {
		match |= subtle.ConstantTimeCompare(got[:], v.digests[i][:])
	}
	if match != 1 {
		return fmt.Errorf("postmark: Authorization: %w", ErrMismatch)
	}
	return nil
}

// postmarkSigner sends the user:password of the webhook URL as Basic
// credentials, as Postmark does: it signs nothing.
func postmarkSigner(o Options) (*Signer, error) {
	if err := postmarkSecret(o.Secrets[0]); err != nil {
		return nil, err
	}
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(o.Secrets[0]))
	return signs(func(r *Request, _ time.Time) error {
		r.Header.Set("Authorization", auth)
		return nil
	})
}
