// Package provider is all hookbox knows of each webhook provider scheme a
// source's verify key names, one file a scheme: how its requests are
// signed and their signatures checked over the raw request bytes, where
// its events carry their id and type, whether it signs a timestamp and how
// much clock difference it accepts, which of its headers hold credentials,
// and the handshake it asks of a new endpoint (Slack's url_verification);
// and, for hookbox fire, the sender's side: how it signs (NewSigner) and
// which headers it sends (SetHeaders), how long it waits for an answer,
// when it retries, and realistic events of it (Samples, Fill).
//
// The schemes are the provider presets (stripe, github, standard for
// Standard Webhooks and Svix, …: the README's preset table lists them
// all), the generic hmac and token schemes, and none. They are listed
// once, in the registry table below; config validation, New, the
// receiver's redaction and its handshakes all read it through Lookup and
// All. A new provider is one more file holding its Provider value and
// verifier, its line in the table, and its test vectors in testdata/.
//
// Most schemes sign the body and some headers, and their Verifier is all
// the receiver needs. A scheme that signs the method or the URL the
// provider called (twilio, square, hubspot), or reads its query
// (mercadopago), is a RequestVerifier too: the receiver builds the Request
// only for those, so the others cost nothing for it.
//
// Check and CheckRequest verify as the receiver does and say which of the
// source's secrets matched (a Match: "secret 2 of 3"); the loop over a
// rotation's secrets is theirs (rotation.go), not each scheme's.
//
// Errors returned by a Verifier wrap exactly one of ErrMissing,
// ErrMalformed, ErrMismatch or ErrTimestamp. Their text names the scheme
// and the header but never a secret, a computed signature or the received
// signature, because the receiver sends it back in the 401 body and logs
// it.
package provider

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// registry is every provider, in the order hookbox lists them.
var registry = [...]Provider{
	stripeProvider,
	githubProvider,
	shopifyProvider,
	slackProvider,
	standardProvider,
	gitlabProvider,
	twilioProvider,
	mercadopagoProvider,
	squareProvider,
	hubspotProvider,
	zoomProvider,
	twitchProvider,
	discordProvider,
	paddleProvider,
	woocommerceProvider,
	linearProvider,
	typeformProvider,
	calendlyProvider,
	lemonsqueezyProvider,
	pagarmeProvider,
	asaasProvider,
	telegramProvider,
	clerkProvider,
	resendProvider,
	sentryProvider,
	vercelProvider,
	notionProvider,
	intercomProvider,
	postmarkProvider,
	mailgunProvider,
	sendgridProvider,
	hmacProvider,
	tokenProvider,
	noneProvider,
}

// Provider is one scheme of a source's verify key.
type Provider struct {
	// Name is the value of verify that picks the scheme.
	Name string
	// Signature says, in the README's preset table (Markdown), which
	// header carries the signature and how it is made.
	Signature string
	// Docs is the provider's page on verifying its webhooks; "" for the
	// generic schemes.
	Docs string
	// EventID and EventType are where the provider puts an event's id and
	// type, as package location parses them: the defaults of a source's
	// event_id and event_type. "" when the provider has no such place and
	// the source must say (event_id) or has no type (event_type).
	EventID, EventType string
	// OrderKey and OrderVersion are where the provider puts the id of the
	// resource an event is about and its version (a number or an RFC 3339
	// time, higher is newer): the defaults of a source's order_key and
	// order_version. "" where the provider documents none.
	OrderKey     string
	OrderVersion string
	// Tolerance is the clock difference accepted by default for a scheme
	// that signs a timestamp; zero for a scheme that signs none, where a
	// source may not set one.
	Tolerance time.Duration
	// Redact lists the provider's headers that carry a credential or a
	// signature: they are never stored.
	Redact []string
	// Header, for a scheme whose signature or token travels in a header
	// the source names (hmac, token), says what that header carries: the
	// source's header key is then required, and the header is redacted.
	// "" for a scheme that fixes its headers.
	Header string
	// Settings are the other source keys the scheme reads.
	Settings []Setting
	// Unsigned is set for the scheme that checks nothing (none): its
	// source takes no secret and must say insecure = true.
	Unsigned bool
	// SignsURL is set for a scheme whose signature covers the URL the
	// provider called: a source of it may say that URL (public_url), for
	// when hookbox sits behind a proxy that changes it.
	SignsURL bool
	// SecretExample is a secret of the scheme's format, for examples and
	// tests; "" when any non-empty string is one.
	SecretExample string
	// Handshake, if set, builds a source's handshake from its options (a
	// reply keyed with the source's secret needs them): it answers the
	// verified requests that ask the endpoint to prove itself instead of
	// carrying an event. Nothing of them is stored.
	Handshake func(o Options) Handshaker

	// Timeout is how long the provider waits for an endpoint's answer
	// before it counts the delivery failed; zero when it publishes none
	// (TimeoutOr). TimeoutNote says where the value comes from.
	Timeout     time.Duration
	TimeoutNote string
	// Retries is when the provider sends a failed delivery again.
	Retries Retries
	// Samples are realistic events of the provider, the first the one a
	// sender uses unless told otherwise.
	Samples []Sample

	// SenderKey, for a scheme whose sender cannot sign with the secret a
	// source verifies with, says what it signs with instead (a private key,
	// where the source holds the public one); "" when the sender holds the
	// source's secret.
	SenderKey string

	// OrderDocs is the provider's page documenting OrderKey and
	// OrderVersion; "" when it has none.
	OrderDocs string
	// Refetch, if set, is the provider's API for the current state of an
	// event's resource (a target's refetch key names the preset).
	Refetch *Refetch

	// verifier builds the scheme's verifier from options New has checked:
	// secrets given and none empty (unless Unsigned), tolerance set.
	verifier func(o Options) (Verifier, error)
	// secret checks the format of one secret, for schemes whose secrets
	// have one; its error never quotes the secret.
	secret func(s string) error
	// signer builds the scheme's signer from options NewSigner has
	// checked: a first secret, not empty.
	signer func(o Options) (*Signer, error)
	// headers sets the provider's own headers of a delivery, after
	// SetHeaders set the id and type headers; nil when it has none.
	headers func(h http.Header, e Event)
}

// Setting is a source key, beyond the secret, that a scheme reads.
type Setting struct {
	Key string // "algorithm", "encoding", "prefix"
	// Choices are the values it takes, in lower case, the first being
	// the default; nil for free text.
	Choices []string
}

// Lookup returns the provider named by a source's verify key; names are
// case-sensitive.
func Lookup(name string) (Provider, bool) {
	for _, p := range registry {
		if p.Name == name {
			return p, true
		}
	}
	return Provider{}, false
}

// All returns every provider, in the order hookbox lists them.
func All() []Provider { return slices.Clone(registry[:]) }

// Names returns the names of every provider, in the order of All.
func Names() []string {
	names := make([]string, len(registry))
	for i, p := range registry {
		names[i] = p.Name
	}
	return names
}

// Setting returns the scheme's setting named key.
func (p Provider) Setting(key string) (Setting, bool) {
	i := slices.IndexFunc(p.Settings, func(s Setting) bool { return s.Key == key })
	if i < 0 {
		return Setting{}, false
	}
	return p.Settings[i], true
}

// ToleranceText is the default tolerance as the preset table shows it
// ("5m", "5s", "5d"), or "" for a scheme that signs no timestamp.
func (p Provider) ToleranceText() string {
	switch d := p.Tolerance; {
	case d <= 0:
		return ""
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	default:
		return d.String()
	}
}

// CheckSecret reports whether secret is usable by the scheme, without
// building a verifier, for the schemes whose secrets have a format
// (standard's whsec_ and base64, postmark's user:password, sendgrid's and
// discord's public keys). The error never quotes the secret.
func (p Provider) CheckSecret(secret string) error {
	if p.secret == nil {
		return nil
	}
	return p.secret(secret)
}

// RedactHeaders lists the headers of a source with options o whose values
// are never stored: the provider's own, and the header o names for a
// scheme that takes one.
func (p Provider) RedactHeaders(o Options) []string {
	if p.Header == "" || o.Header == "" {
		return p.Redact
	}
	return append(slices.Clip(p.Redact), o.Header)
}

// Sentinel errors wrapped by Verify. The receiver maps all of them to 401.
var (
	// ErrMissing: the signature header (or the timestamp or id header the
	// scheme signs) is absent or empty.
	ErrMissing = errors.New("signature missing")
	// ErrMalformed: the header is present but cannot be parsed: bad hex or
	// base64, wrong length, no entry of the supported version, a timestamp
	// that is not a decimal Unix time.
	ErrMalformed = errors.New("signature malformed")
	// ErrMismatch: the header is well formed but no secret produced a
	// matching signature.
	ErrMismatch = errors.New("signature mismatch")
	// ErrTimestamp: the signed timestamp is outside the tolerance.
	ErrTimestamp = errors.New("signature timestamp outside the tolerance")
)

// Options configures one source's provider.
type Options struct {
	Scheme    string        // a provider's Name
	Secrets   []string      // one or more (rotation): a request is valid if ANY secret verifies it
	Tolerance time.Duration // schemes with a timestamp; 0 means the provider's Tolerance
	Header    string        // hmac and token: header name carrying the signature/token
	Algorithm string        // hmac: "sha256" (default) | "sha1" | "sha512"
	Encoding  string        // hmac: "hex" (default) | "base64"
	Prefix    string        // hmac: literal prefix before the encoded digest, e.g. "sha256="
	// EventID and EventType are where a source's events carry their id
	// and type; "" means the provider's.
	EventID, EventType string
	// OrderKey and OrderVersion are where a source's events carry the
	// resource they are about and its version; "" means the provider's
	// (none where it has none).
	OrderKey, OrderVersion string
	// PublicURL is the URL the provider calls, for a scheme that signs it
	// (SignsURL): scheme, host and path, the query being the request's as
	// received. "" means the URL the request was received at.
	PublicURL string
}

// Verifier checks one request. now is the receiver's clock (injected, for tests).
//
// Verify returns nil when the request is authentic, otherwise an error
// wrapping ErrMissing, ErrMalformed, ErrMismatch or ErrTimestamp.
// Implementations are safe for concurrent use.
type Verifier interface {
	Verify(h http.Header, body []byte, now time.Time) error
}

// Request is a webhook request as a RequestVerifier sees it.
type Request struct {
	Method string // as received, e.g. "POST"
	// URL is the URL the provider called: the source's public_url
	// followed by the query as received, else
	// http://<Host header><request URI> as received.
	URL    string
	Header http.Header
	Body   []byte
}

// RequestVerifier is a Verifier whose scheme signs or reads more of the
// request than its headers and body: its method, its URL or its query.
// The receiver calls VerifyRequest, not Verify, for such a verifier; its
// Verify, lacking the URL, refuses every request with ErrMissing.
//
// VerifyRequest's errors are Verify's.
type RequestVerifier interface {
	Verifier
	VerifyRequest(r *Request, now time.Time) error
}

// errNoURL is what a RequestVerifier's Verify returns: it cannot check a
// request without the URL the provider called.
func errNoURL(scheme string) error {
	return fmt.Errorf("%s: the signature covers the request URL, which Verify is not given: %w", scheme, ErrMissing)
}

// New builds the verifier for o.Scheme. It returns an error for an unknown
// scheme, no secrets (except for "none"), an empty secret, a negative
// tolerance, an hmac or token scheme without Header, an unknown hmac
// algorithm or encoding, a secret not of the scheme's format (standard's
// whsec_ and base64, discord's hex public key), and a PublicURL for a
// scheme that signs no URL. Error text never contains a secret.
//
// With more than one secret (a rotation), the verifier holds one of the
// scheme's verifiers for each secret and tries them in order, so that
// Check and CheckRequest can say which secret verified a request.
func New(o Options) (Verifier, error) {
	p, ok := Lookup(o.Scheme)
	switch {
	case ok && o.PublicURL != "" && !p.SignsURL:
		return nil, fmt.Errorf("signature: %s: public_url is only for a scheme that signs the URL", o.Scheme)
	case ok && p.Unsigned:
		return p.verifier(o)
	case o.Scheme == "":
		return nil, errors.New("signature: no scheme")
	case !ok:
		return nil, fmt.Errorf("signature: unknown scheme %q", o.Scheme)
	}
	if len(o.Secrets) == 0 {
		return nil, fmt.Errorf("signature: %s: no secrets", o.Scheme)
	}
	for i, s := range o.Secrets {
		if s == "" {
			return nil, fmt.Errorf("signature: %s: secret %d is empty", o.Scheme, i+1)
		}
	}
	if o.Tolerance < 0 {
		return nil, fmt.Errorf("signature: %s: negative tolerance %s", o.Scheme, o.Tolerance)
	}
	if o.Tolerance == 0 {
		o.Tolerance = p.Tolerance
	}
	v, err := p.verifier(o)
	if err != nil || len(o.Secrets) == 1 {
		return v, err
	}
	return newRotation(p, o, v)
}

// headerName checks and canonicalises the header of a scheme that takes
// one.
func headerName(o Options) (string, error) {
	h := strings.TrimSpace(o.Header)
	if h == "" {
		return "", fmt.Errorf("signature: %s: no header", o.Scheme)
	}
	if strings.ContainsAny(h, " \t\r\n:") {
		return "", fmt.Errorf("signature: %s: invalid header name %q", o.Scheme, h)
	}
	return http.CanonicalHeaderKey(h), nil
}
