// Package location is the grammar of where a value is in a webhook
// request, as a source's event_id, event_type, order_key and order_version
// say it: "header:Name",
// "json:a.b.c" (a segment of digits indexes an array: "json:0.id"),
// "body-sha256" (an id only) or "auto", alone or as alternatives separated
// by commas and tried in order.
//
// Parse is the one parser: hookbox check validates a source's locations
// with it, and serve evaluates the Location it returns on every request
// with Find, which allocates nothing for a header and decodes a JSON body
// at most once, however many locations read it.
package location

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// Field is the value a Location finds. An id and a type differ in what
// "auto" tries, in body-sha256 (an id only) and in a miss: no id is an
// error, no type is none.
type Field uint8

const (
	ID Field = iota
	Type
	// Order is an order_key or order_version: "header:" and "json:" only,
	// and a miss is ErrNotFound (the event has no lane, or no version).
	Order
)

// Location says where in a request a value is found. Several alternatives
// are tried in order. The zero Location finds nothing.
type Location []part

type kind uint8

const (
	header kind = iota + 1
	jsonField
	bodySHA256
	auto
)

type part struct {
	kind  kind
	field Field
	name  string   // header: the canonical name
	path  []string // json: the path's segments
	spec  string   // the alternative as written, spaces around it removed
}

// want is the grammar, as the error messages state it.
const want = `want "header:Name", "json:a.b.c", "body-sha256" or "auto", alternatives separated by ","`

// Parse parses spec as a location of f. Its error is the message hookbox
// check prints after the key and its value; it names the first
// alternative that is not one of the forms, and says which form it took
// for.
func Parse(spec string, f Field) (Location, error) {
	alts := strings.Split(spec, ",")
	loc := make(Location, 0, len(alts))
	for _, a := range alts {
		a = strings.TrimSpace(a)
		p := part{field: f, spec: a}
		switch {
		case a == "":
			return nil, errors.New("empty alternative (" + want + ")")
		case a == "auto":
			if f == Order {
				return nil, errors.New(`"auto" is only for event_id and event_type (want "header:Name" or "json:a.b.c")`)
			}
			p.kind = auto
		case a == "body-sha256":
			if f != ID {
				return nil, errors.New(`"body-sha256" is only for event_id`)
			}
			p.kind = bodySHA256
		case strings.HasPrefix(a, "header:"):
			name := a[len("header:"):]
			if !ValidHeaderName(name) {
				return nil, fmt.Errorf("%q: want a header name after \"header:\"", a)
			}
			p.kind, p.name = header, http.CanonicalHeaderKey(name)
		case strings.HasPrefix(a, "json:"):
			path := strings.Split(a[len("json:"):], ".")
			if slices.Contains(path, "") {
				return nil, fmt.Errorf("%q: want a dot-separated path after \"json:\", e.g. \"json:data.id\"", a)
			}
			p.kind, p.path = jsonField, path
		default:
			return nil, fmt.Errorf("%q: %s", a, want)
		}
		loc = append(loc, p)
	}
	return loc, nil
}

// ValidHeaderName reports whether h is an HTTP field name (an RFC 9110
// token), as "header:" takes.
func ValidHeaderName(h string) bool {
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// Spec is the location as Parse read it, with the spaces around its
// alternatives removed: the form a config keeps.
func (l Location) Spec() string {
	specs := make([]string, len(l))
	for i, p := range l {
		specs[i] = p.spec
	}
	return strings.Join(specs, ",")
}

// String describes where the location looks, for error messages.
func (l Location) String() string {
	parts := make([]string, len(l))
	for i, p := range l {
		switch p.kind {
		case header:
			parts[i] = "header " + p.name
		case jsonField:
			parts[i] = "JSON field " + strings.Join(p.path, ".")
		case auto:
			parts[i] = "auto (the usual headers, then the JSON id or type field)"
		default:
			parts[i] = p.spec
		}
	}
	return strings.Join(parts, " or ")
}

// autoIDHeaders are the usual places a sender puts its delivery id. Not
// X-Request-Id: reverse proxies set a new one on every request, which
// would make each retry of an event a new event.
var autoIDHeaders = []string{"Webhook-Id", "Svix-Id", "X-Github-Delivery", "X-Shopify-Webhook-Id", "X-Gitlab-Event-Uuid", "Idempotency-Key", "X-Event-Id"}

// autoTypeHeaders are the usual places a sender puts the event type.
var autoTypeHeaders = []string{"X-Github-Event", "X-Shopify-Topic", "X-Gitlab-Event", "X-Event-Type", "Webhook-Event"}

// ErrNotFound means no alternative of the location found a value.
var ErrNotFound = errors.New("not found")

// Request is a webhook request as a Location reads it: its headers and
// its raw body. The body is decoded as JSON at most once, when a location
// first asks for a field of it; a Request is for one goroutine.
type Request struct {
	Header http.Header
	Body   []byte

	doc     any
	err     error
	decoded bool
}

// JSON returns the body decoded as JSON, numbers kept as written
// (json.Number). It fails, saying the body is not valid JSON, for
// anything but exactly one JSON value.
func (r *Request) JSON() (any, error) {
	if !r.decoded {
		r.doc, r.err = decodeJSON(r.Body)
		r.decoded = true
	}
	return r.doc, r.err
}

// Find returns the value at l. An id location that finds nothing returns
// ErrNotFound, or the JSON decoding error when a JSON field was looked for
// in a body that is not JSON; a type location's "auto" that finds nothing
// returns "" and no error.
func (l Location) Find(r *Request) (string, error) {
	var jsonErr error
	for i := range l {
		p := &l[i]
		switch p.kind {
		case header:
			if v := r.Header[p.name]; len(v) > 0 && v[0] != "" {
				return v[0], nil
			}
		case jsonField:
			doc, err := r.JSON()
			if err != nil {
				jsonErr = err
				continue
			}
			if v, ok := jsonPath(doc, p.path); ok {
				return v, nil
			}
		case bodySHA256:
			sum := sha256.Sum256(r.Body)
			return hex.EncodeToString(sum[:]), nil
		case auto:
			names, field := autoIDHeaders, "id"
			if p.field != ID {
				names, field = autoTypeHeaders, "type"
			}
			for _, n := range names {
				if v := r.Header[n]; len(v) > 0 && v[0] != "" {
					return v[0], nil
				}
			}
			if doc, err := r.JSON(); err == nil {
				if v, ok := jsonPath(doc, []string{field}); ok {
					return v, nil
				}
			}
			if p.field != ID {
				return "", nil // no type is no error
			}
		}
	}
	if jsonErr != nil {
		return "", jsonErr
	}
	return "", ErrNotFound
}

// decodeJSON decodes a body with numbers kept as written.
func decodeJSON(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("body is not valid JSON: %w", err)
	}
	// A second value after the first ({"id":"a"} {"id":"b"}) is not JSON:
	// reading only the first would let hookbox and a target's parser
	// disagree on the event id.
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("body is not valid JSON: data after the top-level value")
	}
	return doc, nil
}

// jsonPath follows path into doc: a segment is an object's member, or,
// in an array, a decimal index from 0 ("json:0.eventId" is the first
// element's eventId, for senders that batch events in an array).
func jsonPath(doc any, path []string) (string, bool) {
	for _, seg := range path {
		switch d := doc.(type) {
		case map[string]any:
			var ok bool
			if doc, ok = d[seg]; !ok {
				return "", false
			}
		case []any:
			i, ok := arrayIndex(seg)
			if !ok || i >= len(d) {
				return "", false
			}
			doc = d[i]
		default:
			return "", false
		}
	}
	switch v := doc.(type) {
	case string:
		return v, v != ""
	case json.Number:
		return v.String(), true
	default:
		return "", false
	}
}

// arrayIndex reads a path segment as an array index: decimal digits, no
// sign and no leading zero, small enough for any body.
func arrayIndex(seg string) (int, bool) {
	if seg == "" || len(seg) > 6 || (len(seg) > 1 && seg[0] == '0') {
		return 0, false
	}
	n := 0
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
