package fire

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"hookbox/location"
	"hookbox/provider"
)

// event is one event of a scenario: fresh ids, and its time, which is also
// its resource's version.
type event struct {
	id, resource string
	at           time.Time
	// sentAs are the ids the endpoint read it under, in the order first
	// sent: one, but for a provider that sends a new id with each attempt.
	sentAs []string
	// firstSent and lastSent are when its first and last requests went
	// out; seen, when the probe first showed its effect.
	firstSent, lastSent, seen time.Time
}

// sending records that a request of e goes out now.
func (e *event) sending(now time.Time) {
	if e.firstSent.IsZero() {
		e.firstSent = now
	}
	e.lastSent = now
}

// newEvent is a fresh event of a fresh resource at at (whole seconds, so
// every form of its version, seconds, milliseconds or RFC 3339, is exact).
func (r *Runner) newEvent(at time.Time) *event {
	return &event{id: freshLike(r.Sample.ID), resource: freshLike(r.Sample.Resource), at: at.Truncate(time.Second)}
}

// sibling is another event of e's resource, at at.
func (r *Runner) sibling(e *event, at time.Time) *event {
	return &event{id: freshLike(r.Sample.ID), resource: e.resource, at: at.Truncate(time.Second)}
}

// wire is one signed request, ready to write.
type wire struct {
	url    *url.URL
	header http.Header
	body   []byte
	// eventID is the event's id as the endpoint reads it.
	eventID string
}

// request builds attempt n of event e as the provider sends it at now:
// the template filled, the URL with the sample's query, the provider's
// headers, signed. The id the endpoint will read is recorded on e.
func (r *Runner) request(e *event, attempt int, now time.Time) (*wire, error) {
	v := provider.Values{ID: e.id, Resource: e.resource, Type: r.Sample.Type, At: e.at, Attempt: attempt}
	body, err := provider.Fill(r.Template, v)
	if err != nil {
		return nil, fmt.Errorf("event template: %w", err)
	}
	query, err := provider.Fill([]byte(r.Sample.Query), v)
	if err != nil {
		return nil, fmt.Errorf("sample query: %w", err)
	}
	target := r.URL
	if len(query) > 0 {
		target = joinQuery(target, string(query))
	}
	// The URL signed is the one the provider is set up to call: the
	// source's public_url, where hookbox sits behind a proxy, with the
	// request's query.
	signed := target
	if r.Options.PublicURL != "" {
		signed = r.Options.PublicURL
		if _, q, ok := strings.Cut(target, "?"); ok {
			signed += "?" + q
		}
	}
	h := http.Header{}
	h.Set("Content-Type", r.contentType)
	h.Set("User-Agent", "hookbox-fire")
	r.Provider.SetHeaders(r.Options, h, provider.Event{ID: e.id, Type: r.Sample.Type, Attempt: attempt})
	req := &provider.Request{Method: http.MethodPost, URL: signed, Header: h, Body: body}
	if err := r.Signer.Sign(req, now); err != nil {
		return nil, err
	}
	// A signer may add to the query (twilio's bodySHA256): the request
	// goes to the endpoint with the query signed.
	if _, q, ok := strings.Cut(req.URL, "?"); ok {
		base, _, _ := strings.Cut(r.URL, "?")
		target = base + "?" + q
	}
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("URL %q: %w", target, err)
	}
	loc, err := r.idLocation()
	if err != nil {
		return nil, err
	}
	id, err := loc.Find(&location.Request{Header: req.Header, Body: req.Body})
	if err != nil {
		return nil, fmt.Errorf("the event fire sends has no id at %s (give --event a body with {{id}} where the source's event_id reads it): %w", loc, err)
	}
	if !slices.Contains(e.sentAs, id) {
		e.sentAs = append(e.sentAs, id)
	}
	return &wire{url: u, header: req.Header, body: req.Body, eventID: id}, nil
}

// joinQuery adds query to rawURL's own.
func joinQuery(rawURL, query string) string {
	if strings.Contains(rawURL, "?") {
		return rawURL + "&" + query
	}
	return rawURL + "?" + query
}

// contentType is the sample's, unless the template is one's own, whose
// first character says: JSON for an object or an array, else a form.
func contentType(s provider.Sample, template []byte) string {
	body := strings.TrimSpace(string(template))
	sample := strings.TrimSpace(string(s.Body()))
	if body == sample || body == "" {
		return s.ContentTypeOr()
	}
	if body[0] == '{' || body[0] == '[' {
		return "application/json"
	}
	return "application/x-www-form-urlencoded"
}

// freshLike returns a random id of example's shape: a UUID for a UUID;
// otherwise its prefix kept (through the last '_', or its leading capital
// letters, as "SM" of a Twilio sid) and every other character drawn
// anew of its kind: hex for a hex run, digits for digits, lower or upper
// case letters and digits for letters.
func freshLike(example string) string {
	if isUUID(example) {
		return randomUUID()
	}
	cut := strings.LastIndexByte(example, '_') + 1
	if cut == 0 {
		for cut < len(example)-1 && example[cut] >= 'A' && example[cut] <= 'Z' {
			cut++
		}
		if cut == len(example)-1 {
			cut = 0
		}
	}
	prefix, rest := example[:cut], example[cut:]
	if isUUID(rest) {
		return prefix + randomUUID()
	}
	b := []byte(rest)
	hexRun := strings.Trim(rest, "0123456789abcdef") == "" && strings.ContainsAny(rest, "abcdef")
	for i, c := range b {
		switch {
		case hexRun:
			b[i] = pick("0123456789abcdef")
		case c >= '0' && c <= '9':
			b[i] = pick("0123456789")
			if i == 0 && prefix == "" {
				b[i] = pick("123456789") // a number's first digit
			}
		case c >= 'a' && c <= 'z':
			b[i] = pick("abcdefghijklmnopqrstuvwxyz0123456789")
		case c >= 'A' && c <= 'Z':
			b[i] = pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
		}
	}
	return prefix + string(b)
}

func pick(alphabet string) byte {
	n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
	if err != nil {
		panic("fire: crypto/rand: " + err.Error())
	}
	return alphabet[n.Int64()]
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'):
			return false
		}
	}
	return true
}

func randomUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("fire: crypto/rand: " + err.Error())
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // the RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
