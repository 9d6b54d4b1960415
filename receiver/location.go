package receiver

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxEventIDLen bounds an event id; longer ones are rejected with 400.
const MaxEventIDLen = 256

// Location says where in a request a value (event id or type) is found.
// Several alternatives are tried in order.
type Location []locPart

type locPart struct {
	kind string // "header", "json", "body-sha256", "auto"; "generate" for the local sink only
	name string // header name, for kind header
	path []string
}

// ParseLocation parses "header:Name", "json:a.b.c", "body-sha256" or "auto",
// several of them separated by commas.
func ParseLocation(s string) (Location, error) {
	var loc Location
	for _, alt := range strings.Split(s, ",") {
		alt = strings.TrimSpace(alt)
		kind, arg, _ := strings.Cut(alt, ":")
		switch kind {
		case "header":
			if arg == "" {
				return nil, fmt.Errorf("location %q: header name is empty", alt)
			}
			loc = append(loc, locPart{kind: kind, name: http.CanonicalHeaderKey(arg)})
		case "json":
			path := strings.Split(arg, ".")
			for _, p := range path {
				if p == "" {
					return nil, fmt.Errorf("location %q: empty segment in JSON path", alt)
				}
			}
			loc = append(loc, locPart{kind: kind, path: path})
		case "body-sha256", "auto":
			if arg != "" {
				return nil, fmt.Errorf("location %q: %s takes no argument", alt, kind)
			}
			loc = append(loc, locPart{kind: kind})
		default:
			return nil, fmt.Errorf("location %q: want header:NAME, json:PATH, body-sha256 or auto", alt)
		}
	}
	return loc, nil
}

// String describes where the location looks, for error messages.
func (l Location) String() string {
	parts := make([]string, len(l))
	for i, p := range l {
		switch p.kind {
		case "header":
			parts[i] = "header " + p.name
		case "json":
			parts[i] = "JSON field " + strings.Join(p.path, ".")
		case "auto":
			parts[i] = "auto (the usual headers, then the JSON id or type field)"
		default:
			parts[i] = p.kind
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

// errNotFound means the location found nothing.
var errNotFound = errors.New("not found")

// extract returns the value at l. doc is the decoded JSON body, decoded
// lazily through getDoc.
func (l Location) extract(h http.Header, body []byte, getDoc func() (any, error), isID bool) (string, error) {
	var jsonErr error
	for _, p := range l {
		switch p.kind {
		case "header":
			if v := h.Get(p.name); v != "" {
				return v, nil
			}
		case "json":
			doc, err := getDoc()
			if err != nil {
				jsonErr = err
				continue
			}
			if v, ok := jsonPath(doc, p.path); ok {
				return v, nil
			}
		case "body-sha256":
			sum := sha256.Sum256(body)
			return hex.EncodeToString(sum[:]), nil
		case "auto":
			names := autoTypeHeaders
			if isID {
				names = autoIDHeaders
			}
			for _, n := range names {
				if v := h.Get(n); v != "" {
					return v, nil
				}
			}
			field := "type"
			if isID {
				field = "id"
			}
			if doc, err := getDoc(); err == nil {
				if v, ok := jsonPath(doc, []string{field}); ok {
					return v, nil
				}
			}
			if !isID {
				return "", nil // no type is no error
			}
		case "generate":
			// The local sink stores whatever it gets: a request carrying no
			// id gets a made-up one (and so is never a duplicate).
			var b [12]byte
			_, _ = rand.Read(b[:])
			return "gen_" + hex.EncodeToString(b[:]), nil
		}
	}
	if jsonErr != nil {
		return "", jsonErr
	}
	return "", errNotFound
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

func jsonPath(doc any, path []string) (string, bool) {
	for _, seg := range path {
		m, ok := doc.(map[string]any)
		if !ok {
			return "", false
		}
		if doc, ok = m[seg]; !ok {
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

// validID reports whether an id can be stored and echoed in headers.
func validValue(s string) error {
	if len(s) > MaxEventIDLen {
		return fmt.Errorf("is %d bytes long (max %d)", len(s), MaxEventIDLen)
	}
	ascii := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return errors.New("contains control characters")
		} else if c >= 0x80 {
			ascii = false
		}
	}
	if ascii {
		return nil // the usual id: nothing more to look at
	}
	if !utf8.ValidString(s) {
		return errors.New("is not valid UTF-8")
	}
	for _, r := range s {
		// C1 controls drive terminals as C0 ones do; bidirectional
		// overrides make an id read as another in a listing.
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return errors.New("contains control characters")
		}
	}
	return nil
}
