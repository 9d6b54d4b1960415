package provider

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

const twilioHeader = "X-Twilio-Signature"

// twilioProvider: X-Twilio-Signature is base64 of HMAC-SHA1, keyed with the
// account's auth token, over the full URL Twilio called (with its query)
// followed by the form parameters of the body, sorted by name, each name
// followed by its value. A JSON body is not signed as parameters: Twilio
// adds bodySHA256 (hex SHA-256 of the body) to the URL's query and signs
// the URL alone, so both the URL's signature and the body's hash are
// checked. As twilio-python (twilio/request_validator.py) and twilio-node
// (src/webhooks/webhooks.ts) do:
//   - the URL is tried without its port and with it (the default port
//     added when it has none): Twilio's own signing is inconsistent there;
//   - a name given several values contributes each distinct value once,
//     in sorted order (twilio-go keeps only the first: the two current
//     SDKs agree, and the vectors follow them).
//
// Twilio signs no timestamp, so a captured request can be sent again at
// any time; its event id decides whether that is a new event. Twilio's
// documentation of its webhooks (webhooks security, connection overrides)
// names no delivery id: the I-Twilio-Idempotency-Token header its requests
// carry is undocumented there, and it is not signed, so anyone holding one
// request could resend it as new events under new tokens. The default id
// is therefore body-sha256: a retry repeats the same bytes, and a copy is a
// duplicate. (Reordering a form body's parameters keeps the signature, so
// whoever holds one request can still make a new id that way; nothing in
// Twilio's scheme prevents it.) A source that trusts the token sets
// event_id = "header:I-Twilio-Idempotency-Token,body-sha256".
//
// Form bodies carry no common type field, so the preset has no event type.
var twilioProvider = Provider{
	Name:      "twilio",
	Signature: "`X-Twilio-Signature` (base64 HMAC-SHA1 of the URL + sorted form params, or of the URL alone with its `bodySHA256` checked; URL with and without port); no timestamp signed; `public_url`",
	Docs:      "https://www.twilio.com/docs/usage/webhooks/webhooks-security",
	EventID:   "body-sha256",
	Redact:    []string{twilioHeader},
	SignsURL:  true,
	// Connection overrides: the default read timeout is 15 s, and by
	// default only a failed connection is retried, once: a request that
	// reached the endpoint is not sent again.
	Timeout: 15 * time.Second,
	Retries: Retries{Note: "none by default: only a failed connection is retried (connection overrides change it)"},
	Samples: []Sample{
		{File: "twilio/message.received.form", ContentType: "application/x-www-form-urlencoded", ID: "SM1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d", Resource: "15551230000"},
	},
	signer: twilioSigner,
	verifier: func(o Options) (Verifier, error) {
		return &twilioVerifier{keys: rawKeys(sha1.New, o.Secrets)}, nil
	},
}

type twilioVerifier struct {
	keys []*macKey
}

func (v *twilioVerifier) Verify(http.Header, []byte, time.Time) error { return errNoURL("twilio") }

func (v *twilioVerifier) VerifyRequest(r *Request, _ time.Time) error {
	sig := r.Header.Get(twilioHeader)
	if sig == "" {
		return fmt.Errorf("twilio: %s: %w", twilioHeader, ErrMissing)
	}
	var want [sha1.Size]byte
	if !decodeBase64(want[:], sig) {
		return fmt.Errorf("twilio: %s: not base64 of a 20-byte digest: %w", twilioHeader, ErrMalformed)
	}
	withoutPort, withPort, ok := twilioURLs(r.URL)
	if !ok {
		return fmt.Errorf("twilio: the request URL %q is not an absolute http(s) URL: %w", r.URL, ErrMalformed)
	}
	params, err := twilioParams(r.URL, r.Body)
	if err != nil {
		return err
	}
	var mac [maxMAC]byte
	for _, k := range v.keys {
		for _, u := range [2]string{withoutPort, withPort} {
			if subtle.ConstantTimeCompare(k.sum(mac[:], nil, u, params), want[:]) == 1 {
				return nil
			}
		}
	}
	return fmt.Errorf("twilio: %s: %w", twilioHeader, ErrMismatch)
}

// twilioParams returns what follows the URL in the signed string: the
// body's form parameters, or nothing for a body whose hash the URL's
// bodySHA256 holds (which it checks).
func twilioParams(rawURL string, body []byte) (string, error) {
	query := rawURL
	if i := strings.IndexByte(query, '?'); i >= 0 {
		query = query[i+1:]
	} else {
		query = ""
	}
	if strings.Contains(query, "bodySHA256") {
		// Parsed as the SDKs parse it; a bad escape elsewhere in the
		// query does not hide the value.
		vals, _ := url.ParseQuery(query)
		if hash, ok := vals["bodySHA256"]; ok {
			sum := sha256.Sum256(body)
			got := hex.EncodeToString(sum[:])
			if len(hash) == 0 || subtle.ConstantTimeCompare([]byte(got), []byte(hash[0])) != 1 {
				return "", fmt.Errorf("twilio: the URL's bodySHA256 is not the SHA-256 of the body: %w", ErrMismatch)
			}
			return "", nil
		}
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return "", fmt.Errorf("twilio: the body is neither form-encoded nor hashed in the URL's bodySHA256: %w", ErrMalformed)
	}
	var b strings.Builder
	b.Grow(len(body))
	for _, name := range slices.Sorted(maps.Keys(form)) {
		vals := slices.Clone(form[name])
		slices.Sort(vals)
		for _, val := range slices.Compact(vals) {
			b.WriteString(name)
			b.WriteString(val)
		}
	}
	return b.String(), nil
}

// twilioURLs returns rawURL without its port and with it (":443" or ":80"
// added when it has none), changing nothing else of it. ok is false when
// rawURL is not an absolute http or https URL.
func twilioURLs(rawURL string) (withoutPort, withPort string, ok bool) {
	// Parsed only to be refused when it is no URL, or has a fragment (which
	// never travels in a request); the URL signed is rawURL's own bytes.
	if u, err := url.Parse(rawURL); err != nil || u.Opaque != "" || u.Hostname() == "" || strings.Contains(rawURL, "#") {
		return "", "", false
	}
	scheme, rest, found := strings.Cut(rawURL, "://")
	if !found || (scheme != "http" && scheme != "https") {
		return "", "", false
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	userinfo := ""
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		userinfo, authority = authority[:at+1], authority[at+1:]
	}
	host, port := authority, ""
	if i := strings.LastIndexByte(authority, ':'); i >= 0 && !strings.Contains(authority[i:], "]") {
		host, port = authority[:i], authority[i+1:]
	}
	if host == "" {
		return "", "", false
	}
	if port == "" {
		port = "80"
		if scheme == "https" {
			port = "443"
		}
	}
	head := scheme + "://" + userinfo + host
	return head + tail, head + ":" + port + tail, true
}

// twilioSigner signs as Twilio does: a form body by its parameters, any
// other body through the URL, whose query gets the body's bodySHA256
// first (Twilio's JSON webhooks).
func twilioSigner(o Options) (*Signer, error) {
	key := []byte(o.Secrets[0])
	return signs(func(r *Request, _ time.Time) error {
		form := strings.HasPrefix(strings.ToLower(r.Header.Get("Content-Type")), "application/x-www-form-urlencoded")
		if !form && queryValue(r.URL, "bodySHA256") == "" {
			sum := sha256.Sum256(r.Body)
			sep := "?"
			if strings.Contains(r.URL, "?") {
				sep = "&"
			}
			r.URL += sep + "bodySHA256=" + hex.EncodeToString(sum[:])
		}
		params, err := twilioParams(r.URL, r.Body)
		if err != nil {
			return err
		}
		r.Header.Set(twilioHeader, base64MAC(hmacOf(sha1.New, key, []byte(r.URL+params))))
		return nil
	})
}
