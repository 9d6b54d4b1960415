package provider

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Event is what a sender says of one delivery beside its body and
// signature: the event's id and type, where the provider sends them in
// headers, and which attempt of the provider this is.
type Event struct {
	ID, Type string
	// Attempt is 1 for the first delivery of the event and counts the
	// provider's retries from 2: some providers say so in a header
	// (Slack's X-Slack-Retry-Num), and one sends a new id with each
	// (Sentry's Request-ID).
	Attempt int
}

// SetHeaders sets on h the headers p's provider sends with a delivery of
// e, before it is signed: the event id where o's event_id (else the
// provider's) first names a header, the type where its event_type first
// names one, and the provider's own (Twitch's message type, Slack's retry
// headers, Svix's svix-id for Clerk and Resend, ...). A source whose id
// is in the body carries it there; SetHeaders does not touch the body.
func (p Provider) SetHeaders(o Options, h http.Header, e Event) {
	if name := firstHeader(o.EventID, p.EventID); name != "" && e.ID != "" {
		h.Set(name, e.ID)
	}
	if name := firstHeader(o.EventType, p.EventType); name != "" && e.Type != "" {
		h.Set(name, e.Type)
	}
	if p.headers != nil {
		p.headers(h, e)
	}
}

// firstHeader is the header the first alternative of a location names
// (spec, else def), "" when it names none: "header:X-GitHub-Delivery" is
// X-GitHub-Delivery; "json:id" and "body-sha256" are not headers.
func firstHeader(spec, def string) string {
	if spec == "" {
		spec = def
	}
	first, _, _ := strings.Cut(spec, ",")
	name, ok := strings.CutPrefix(strings.TrimSpace(first), "header:")
	if !ok || name == "" {
		return ""
	}
	return http.CanonicalHeaderKey(name)
}

// Signer signs requests as a scheme's sender does, with one secret.
type Signer struct {
	scheme string
	sign   signFunc
	public string
}

// signFunc signs r at now: it sets the signature headers and, for the
// schemes that sign more than the body, may change what they carry.
type signFunc func(r *Request, now time.Time) error

// NewSigner returns the signer of o.Scheme, signing with o.Secrets[0] and
// o's header settings (hmac, token). It returns an error for an unknown
// scheme, no secret (but for none), a secret not of the form the sender
// signs with, and a scheme whose sender signs with a key other than the
// source's secret (discord, sendgrid: a private key, where the source
// holds its public half) given that public half. The text never quotes
// the secret.
func NewSigner(o Options) (*Signer, error) {
	p, ok := Lookup(o.Scheme)
	switch {
	case o.Scheme == "":
		return nil, errors.New("sign: no scheme")
	case !ok:
		return nil, fmt.Errorf("sign: unknown scheme %q", o.Scheme)
	case p.Unsigned:
		return &Signer{scheme: p.Name, sign: func(*Request, time.Time) error { return nil }}, nil
	case len(o.Secrets) == 0 || o.Secrets[0] == "":
		return nil, fmt.Errorf("sign: %s: no secret", o.Scheme)
	case p.signer == nil:
		// A registered scheme without a signer is a programmer's error,
		// caught by the registry test.
		return nil, fmt.Errorf("sign: %s: no signer", o.Scheme)
	}
	s, err := p.signer(o)
	if err != nil {
		return nil, fmt.Errorf("sign: %s: %w", o.Scheme, err)
	}
	s.scheme = p.Name
	return s, nil
}

// Sign signs r at now, as the provider signs a delivery it sends at now:
// it sets the signature headers (and the timestamp headers of a scheme
// that signs a time), r's id headers being set already (SetHeaders) where
// the scheme signs them. A scheme that signs more than the body may change
// r's URL or body too: twilio adds bodySHA256 to the query of a request
// whose body is not a form, linear sets the body's webhookTimestamp, and
// mailgun fills in the body's signature object. The error says what the
// request lacks (a standard or twitch request without its id header, a
// mailgun body that is not a JSON object).
func (s *Signer) Sign(r *Request, now time.Time) error {
	if r.Header == nil {
		r.Header = http.Header{}
	}
	if err := s.sign(r, now); err != nil {
		return fmt.Errorf("sign: %s: %w", s.scheme, err)
	}
	return nil
}

// PublicKey is the public half of the key a scheme signs with, in the form
// the source's secret takes (discord's hex, sendgrid's base64), for the
// schemes whose sender signs with a private key; "" for the others.
func (s *Signer) PublicKey() string { return s.public }

// signs wraps a signFunc.
func signs(f signFunc) (*Signer, error) { return &Signer{sign: f}, nil }

// encodeMAC is how a scheme writes a digest.
type encodeMAC func([]byte) string

var (
	hexMAC    encodeMAC = hex.EncodeToString
	base64MAC encodeMAC = base64.StdEncoding.EncodeToString
)

// hmacOf is HMAC(key, parts...), the parts concatenated.
func hmacOf(fn func() hash.Hash, key []byte, parts ...[]byte) []byte {
	m := hmac.New(fn, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// bodySigner signs the body alone: header = prefix + enc(HMAC(secret,
// body)), for the schemes that sign nothing else (shopify, vercel, ...).
func bodySigner(header, prefix string, fn func() hash.Hash, enc encodeMAC) func(Options) (*Signer, error) {
	return func(o Options) (*Signer, error) {
		key := []byte(o.Secrets[0])
		return signs(func(r *Request, _ time.Time) error {
			r.Header.Set(header, prefix+enc(hmacOf(fn, key, r.Body)))
			return nil
		})
	}
}

// tokenSigner sends the secret itself in a header: gitlab, asaas,
// telegram and token, which sign nothing.
func tokenSigner(header string) func(Options) (*Signer, error) {
	return func(o Options) (*Signer, error) {
		secret := o.Secrets[0]
		return signs(func(r *Request, _ time.Time) error {
			r.Header.Set(header, secret)
			return nil
		})
	}
}

// unix is a time as the decimal Unix seconds the schemes sign.
func unix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

// unixMilli is a time as decimal Unix milliseconds.
func unixMilli(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// prefixedSigner is the shape Slack and Zoom sign with: a timestamp
// header, and a signature header of "v0=" and the hex of HMAC-SHA256 over
// "v0:<timestamp>:<body>".
func prefixedSigner(sigHeader, tsHeader string) func(Options) (*Signer, error) {
	return func(o Options) (*Signer, error) {
		key := []byte(o.Secrets[0])
		return signs(func(r *Request, now time.Time) error {
			ts := unix(now)
			r.Header.Set(tsHeader, ts)
			r.Header.Set(sigHeader, "v0="+hexMAC(hmacOf(sha256.New, key, []byte("v0:"+ts+":"), r.Body)))
			return nil
		})
	}
}

// derivedUUID is a UUID-shaped id made from id and n, the same for the
// same pair: the id of attempt n of an event whose provider sends a new
// one with each attempt.
func derivedUUID(id string, n int) string {
	sum := sha256.Sum256([]byte(id + "#" + strconv.Itoa(n)))
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// errNotObject: a scheme that signs a member of a JSON body was given a
// body that is not one JSON object.
var errNotObject = errors.New("the body is not a JSON object")

// setMember returns body, a JSON object, with its top-level member key set
// to value (raw JSON), every other byte kept: the last of repeated keys is
// the one replaced, as decoding takes the last; a missing member is added
// first.
func setMember(body []byte, key string, value []byte) ([]byte, error) {
	var whole map[string]json.RawMessage
	if !decodeOne(body, &whole) || whole == nil {
		return nil, errNotObject
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // the '{'
		return nil, errNotObject
	}
	open := int(dec.InputOffset())
	start, end := -1, -1
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, errNotObject
		}
		afterKey := int(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, errNotObject
		}
		if k == key {
			colon := bytes.IndexByte(body[afterKey:], ':')
			start = afterKey + colon + 1
			for start < len(body) && strings.IndexByte(" \t\r\n", body[start]) >= 0 {
				start++
			}
			end = int(dec.InputOffset())
		}
	}
	var b bytes.Buffer
	if start < 0 {
		b.Write(body[:open])
		b.WriteString(strconv.Quote(key) + ":")
		b.Write(value)
		if len(whole) > 0 {
			b.WriteByte(',')
		}
		b.Write(body[open:])
		return b.Bytes(), nil
	}
	b.Write(body[:start])
	b.Write(value)
	b.Write(body[end:])
	return b.Bytes(), nil
}
