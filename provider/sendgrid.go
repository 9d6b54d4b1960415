package provider

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

const (
	sendgridSigHeader = "X-Twilio-Email-Event-Webhook-Signature"
	sendgridTSHeader  = "X-Twilio-Email-Event-Webhook-Timestamp"
)

// sendgridProvider is SendGrid's Signed Event Webhook
// (twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features;
// the eventwebhook helpers of sendgrid-go, sendgrid-nodejs and
// sendgrid-python).
//
// SendGrid signs with ECDSA on P-256 and SHA-256, over the
// X-Twilio-Email-Event-Webhook-Timestamp value followed by the raw body,
// and sends the ASN.1 DER signature in base64 in
// X-Twilio-Email-Event-Webhook-Signature. The "secret" is the
// verification key SendGrid's Mail Settings show: the base64 of the public
// key's DER (PKIX) form; a PEM block of it works too. It is public, so
// copying it is harmless, but each listed key is tried, for a key that
// SendGrid replaces.
//
// The timestamp and the body are concatenated with nothing between them,
// so a digit moved from one to the other keeps the signature; it also
// makes the timestamp a tenth or ten times the signed one, which the
// tolerance, checked both ways, refuses.
//
// None of the SDKs checks the timestamp. SendGrid retries a failed POST
// for up to 24 hours and its docs do not say a retry is signed anew, so a
// bound of minutes could refuse its own retries after an outage: the
// default is 48 hours, either way, past the whole retry window, which
// still refuses a copy kept for later.
//
// A POST is a batch: a JSON array of events, each with its own
// sg_event_id and type. The batch has no id of its own, and hookbox stores
// the request, so the id is the body's SHA-256 (a retry resends the same
// batch, and the signature covers every byte of it) and there is no type;
// a target that needs each event once dedupes on sg_event_id itself.
var sendgridProvider = Provider{
	Name:          "sendgrid",
	Signature:     "`X-Twilio-Email-Event-Webhook-Signature` (base64 ECDSA P-256 over `X-Twilio-Email-Event-Webhook-Timestamp` and the body; the secret is the base64 public key)",
	Docs:          "https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/getting-started-event-webhook-security-features",
	EventID:       "body-sha256",
	Tolerance:     48 * time.Hour,
	Redact:        []string{sendgridSigHeader},
	SecretExample: sendgridExampleKey,
	// A failed POST is retried for up to 24 hours; intervals not published.
	TimeoutNote: "not published",
	Retries: Retries{
		Delays: backoff(10, time.Minute, 24*time.Hour),
		Note:   "for up to 24 hours, intervals not published: 10 doubling delays over 24 hours",
	},
	Samples: []Sample{
		{File: "sendgrid/delivered.json", ID: "sZROwMGMagFgnOEmSdvhig", Resource: "14c5d75ce93", Key: "json:0.sg_message_id", Version: "json:0.timestamp"},
	},
	signer:    sendgridSigner,
	SenderKey: "the ECDSA P-256 private key of the pair whose public half the source holds (PEM, or the base64 of its DER): SendGrid keeps its own, so only an endpoint set up with a key of yours can be tested",
	verifier: func(o Options) (Verifier, error) {
		v := &sendgridVerifier{tol: o.Tolerance}
		for i, s := range o.Secrets {
			k, err := sendgridKey(s)
			if err != nil {
				return nil, fmt.Errorf("signature: sendgrid: secret %d: %w", i+1, err)
			}
			v.keys = append(v.keys, k)
		}
		return v, nil
	},
	secret: func(s string) error {
		_, err := sendgridKey(s)
		return err
	},
}

// sendgridExampleKey is the public key of the SDKs' tests
// (sendgrid-go helpers/eventwebhook/eventwebhook_test.go, also
// sendgrid-nodejs packages/eventwebhook/src/eventwebhook.spec.js).
const sendgridExampleKey = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEEDr2LjtURuePQzplybdC+u4CwrqDqBaWjcMMsTbhdbcwHBcepxo7yAQGhHPTnlvFYPAZFceEu/1FwCM/QmGUhA=="

// sendgridKey parses a verification key: base64 of a PKIX public key,
// bare or in a PEM block, that must be ECDSA on P-256.
func sendgridKey(s string) (*ecdsa.PublicKey, error) {
	b64 := strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(b64, "-----BEGIN PUBLIC KEY-----"); ok {
		body, ok := strings.CutSuffix(strings.TrimSpace(rest), "-----END PUBLIC KEY-----")
		if !ok {
			return nil, errors.New("a PEM public key without its END line")
		}
		b64 = strings.Join(strings.Fields(body), "")
	}
	der, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, errors.New("want the base64 verification key of SendGrid's Signed Event Webhook settings")
	}
	pub, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, errors.New("not a public key (want the base64 verification key of SendGrid's Signed Event Webhook settings)")
	}
	k, ok := pub.(*ecdsa.PublicKey)
	if !ok || k.Curve != elliptic.P256() {
		return nil, errors.New("not an ECDSA P-256 public key, which SendGrid signs with")
	}
	return k, nil
}

// sendgridVerifier checks SendGrid's ECDSA signature over timestamp and body.
type sendgridVerifier struct {
	keys []*ecdsa.PublicKey
	tol  time.Duration
}

// sendgridMaxSig is the longest base64 of a DER ECDSA P-256 signature
// (at most 72 bytes), rounded up: a longer header is refused unread.
const sendgridMaxSig = 100

func (v *sendgridVerifier) Verify(h http.Header, body []byte, now time.Time) error {
	sig64 := h.Get(sendgridSigHeader)
	if sig64 == "" {
		return fmt.Errorf("sendgrid: %s: %w", sendgridSigHeader, ErrMissing)
	}
	ts := h.Get(sendgridTSHeader)
	if ts == "" {
		return fmt.Errorf("sendgrid: %s: %w", sendgridTSHeader, ErrMissing)
	}
	t, ok := parseUnix(ts)
	if !ok {
		return fmt.Errorf("sendgrid: %s: not a decimal Unix time: %w", sendgridTSHeader, ErrMalformed)
	}
	if len(sig64) > sendgridMaxSig {
		return fmt.Errorf("sendgrid: %s: longer than an ECDSA P-256 signature: %w", sendgridSigHeader, ErrMalformed)
	}
	sig, err := base64.StdEncoding.DecodeString(sig64)
	if err != nil || len(sig) < 8 {
		return fmt.Errorf("sendgrid: %s: not the base64 of a DER signature: %w", sendgridSigHeader, ErrMalformed)
	}
	if !fresh(t, now, v.tol, true) {
		return fmt.Errorf("sendgrid: %s: %w", sendgridTSHeader, ErrTimestamp)
	}
	d := sha256.New()
	d.Write([]byte(ts))
	d.Write(body)
	var sum [sha256.Size]byte
	digest := d.Sum(sum[:0])
	for _, k := range v.keys {
		// VerifyASN1 refuses a signature that is not DER of two positive
		// integers, so a malformed one is a mismatch, like a wrong one.
		if ecdsa.VerifyASN1(k, digest, sig) {
			return nil
		}
	}
	return fmt.Errorf("sendgrid: %s: %w", sendgridSigHeader, ErrMismatch)
}

// sendgridSigner signs with an ECDSA P-256 private key, whose public half
// the source holds. SendGrid keeps the private key of the verification
// key its settings show: only an endpoint set up with the public half of a
// pair of one's own can be sent requests signed this way. ECDSA
// signatures are random: two signatures of one request differ, and both
// verify.
func sendgridSigner(o Options) (*Signer, error) {
	k, err := sendgridPrivateKey(o.Secrets[0])
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		return nil, err
	}
	s, _ := signs(func(r *Request, now time.Time) error {
		ts := unix(now)
		d := sha256.New()
		d.Write([]byte(ts))
		d.Write(r.Body)
		sig, err := ecdsa.SignASN1(rand.Reader, k, d.Sum(nil))
		if err != nil {
			return err
		}
		r.Header.Set(sendgridTSHeader, ts)
		r.Header.Set(sendgridSigHeader, base64.StdEncoding.EncodeToString(sig))
		return nil
	})
	s.public = base64.StdEncoding.EncodeToString(der)
	return s, nil
}

// sendgridPrivateKey parses an ECDSA P-256 private key: a PEM block, "EC
// PRIVATE KEY" (as openssl ecparam -genkey writes it) or PKCS#8 "PRIVATE
// KEY", or the base64 of either's DER. A public key is refused: it
// cannot sign.
func sendgridPrivateKey(s string) (*ecdsa.PrivateKey, error) {
	s = strings.TrimSpace(s)
	var der []byte
	if strings.HasPrefix(s, "-----BEGIN") {
		block, _ := pem.Decode([]byte(s))
		if block == nil {
			return nil, errors.New("not a PEM block")
		}
		der = block.Bytes
	} else {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, errors.New("want an ECDSA P-256 private key: PEM, or the base64 of its DER")
		}
		der = b
	}
	var key any
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		key = k
	} else if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		key = k
	} else if _, err := x509.ParsePKIXPublicKey(der); err == nil {
		return nil, errors.New("this is a public verification key, which verifies but cannot sign: sign with the private key of its pair")
	} else {
		return nil, errors.New("not a private key (want an ECDSA P-256 private key: PEM, or the base64 of its DER)")
	}
	k, ok := key.(*ecdsa.PrivateKey)
	if !ok || k.Curve != elliptic.P256() {
		return nil, errors.New("not an ECDSA P-256 private key, which SendGrid signs with")
	}
	return k, nil
}
