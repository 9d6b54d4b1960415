package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Refetch is a provider's API for the current state of the resource an
// event is about: a target with refetch = "<preset>" sends the request
// Request builds, with the target's credential, instead of trusting the
// webhook's copy, which may be older than one already applied.
type Refetch struct {
	// Base is the API's base URL, without a trailing slash. A target's
	// refetch_base_url replaces it (a proxy, a test server); "" for an API
	// whose host Request takes from the event (Shopify's shop).
	Base string
	// Docs is the API reference Request follows.
	Docs string
	// What says, in the README's table (Markdown), which request is sent.
	What string
	// Rate is the provider's published limit for one credential, as a
	// target's refetch_rate writes it ("100/s", "5000/h"); RateNote says
	// where it comes from, or how it varies.
	Rate, RateNote string
	// RateFor, if set, is the limit for a given credential (Stripe's test
	// keys have a lower one); it returns Rate for the others.
	RateFor func(credential string) string
	// AuthHeader is the header the credential travels in, as is; "" means
	// Authorization: Bearer <credential>.
	AuthHeader string
	// Header are headers every fetch sends (the API version, Accept).
	Header map[string]string
	// Request builds the fetch of e's resource. Its error wraps
	// ErrNoResource when the event names nothing this API can fetch.
	Request func(e FetchEvent) (FetchRequest, error)
}

// FetchEvent is a stored event as a Refetch's Request reads it.
type FetchEvent struct {
	Type   string
	Header http.Header // as received (redacted ones are not stored); may be nil
	Body   []byte
	// Base is the base URL the fetch goes to: the target's
	// refetch_base_url, else the preset's Base ("" for Shopify's).
	Base string
}

// FetchRequest is one GET of the API.
type FetchRequest struct {
	// Base, when set, is the base URL the event itself names (the shop of a
	// Shopify webhook); "" means FetchEvent.Base. A configured
	// refetch_base_url always wins over it.
	Base string
	// Path is the escaped path and query below the base, starting with "/".
	Path string
	// Header are headers this fetch adds (Stripe-Account for an event of a
	// connected account).
	Header map[string]string
}

// ErrNoResource means the event names no resource the provider's API can
// fetch (a Stripe balance.available, a GitHub push): no retry can change
// that, so its delivery is a permanent failure.
var ErrNoResource = errors.New("the event names no resource hookbox can fetch")

func noResource(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrNoResource)
}

// jsonObject decodes a JSON object body, numbers kept as written.
func jsonObject(body []byte) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil || doc == nil {
		return nil, noResource("the body is not a JSON object")
	}
	return doc, nil
}

// field follows a dotted path of object members to a string or a number.
func field(doc map[string]any, path string) string {
	var cur any = doc
	for seg := range strings.SplitSeq(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[seg]
	}
	switch v := cur.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	}
	return ""
}

// apiPath checks that p is a path (and query) below an API's base: it
// starts with one "/", names no host and climbs no "..", so a fetch never
// leaves the base it is sent to.
func apiPath(p string) (string, error) {
	u, err := url.Parse(p)
	switch {
	case err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Fragment != "" || u.Opaque != "":
		return "", noResource("%q is not a path below the API's base", p)
	case !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//"):
		return "", noResource("%q is not a path below the API's base", p)
	case strings.ContainsAny(p, "\\\r\n\t #"):
		return "", noResource("%q is not a path below the API's base", p)
	}
	for seg := range strings.SplitSeq(u.Path, "/") {
		if seg == ".." || seg == "." {
			return "", noResource("%q climbs out of the API's base", p)
		}
	}
	return p, nil
}

// idSegment escapes an id for one path segment; an empty id is none.
func idSegment(id string) (string, bool) {
	if id == "" || id == "." || id == ".." {
		return "", false
	}
	return url.PathEscape(id), true
}
