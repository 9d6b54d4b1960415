package refetch

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"hookbox/location"
)

// Template is a parsed refetch_url: literal text and {json:…} placeholders,
// each filled from the event and URL-escaped, as a path segment before the
// query and as a query value after it.
type Template struct {
	raw   string
	parts []tmplPart
	base  string // scheme://host[:port], which no placeholder touches
}

type tmplPart struct {
	lit   string
	loc   location.Location // nil for a literal
	spec  string
	query bool // the placeholder is in the query
}

// ParseTemplate parses a refetch_url. Its errors say what is wrong: not
// an absolute http(s) URL, a brace without its pair, a placeholder that is
// not a json: location, or one in the scheme, host or port (a fetch only
// ever goes to the host the config names).
func ParseTemplate(raw string) (*Template, error) {
	t := &Template{raw: raw}
	var probe strings.Builder
	inQuery := false
	rest := raw
	for rest != "" {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			t.parts = append(t.parts, tmplPart{lit: rest})
			probe.WriteString(rest)
			break
		}
		if rest[open] == '}' {
			return nil, errors.New("a } without its {: placeholders are {json:a.b}")
		}
		lit := rest[:open]
		inQuery = inQuery || strings.Contains(lit, "?")
		t.parts = append(t.parts, tmplPart{lit: lit})
		probe.WriteString(lit)
		end := strings.IndexAny(rest[open+1:], "{}")
		if end < 0 || rest[open+1+end] != '}' {
			return nil, errors.New("a { without its }: placeholders are {json:a.b}")
		}
		spec := strings.TrimSpace(rest[open+1 : open+1+end])
		for _, alt := range strings.Split(spec, ",") {
			if !strings.HasPrefix(strings.TrimSpace(alt), "json:") {
				return nil, fmt.Errorf("placeholder {%s}: want {json:a.b} (a field of the event's JSON body)", spec)
			}
		}
		loc, err := location.Parse(spec, location.ID)
		if err != nil {
			return nil, fmt.Errorf("placeholder {%s}: %v", spec, err)
		}
		t.parts = append(t.parts, tmplPart{loc: loc, spec: spec, query: inQuery})
		probe.WriteString("x")
		rest = rest[open+1+end+1:]
	}
	u, err := url.Parse(probe.String())
	if err != nil {
		return nil, fmt.Errorf("not a URL: %v", unwrapURLError(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errors.New("want an absolute http:// or https:// URL")
	}
	if u.Host == "" || u.User != nil {
		return nil, errors.New("want an absolute http:// or https:// URL with a host (and no user:password)")
	}
	if u.Fragment != "" {
		return nil, errors.New("a #fragment is never sent: leave it out")
	}
	t.base = u.Scheme + "://" + u.Host
	// The scheme, host and port are literal: the text before the first
	// placeholder holds all of them and goes on past them.
	prefix := ""
	for _, p := range t.parts {
		if p.loc != nil {
			if !strings.HasPrefix(prefix, t.base) || len(prefix) == len(t.base) {
				return nil, errors.New("a placeholder in the scheme, host or port: only the path and the query may hold them")
			}
			break
		}
		prefix += p.lit
	}
	return t, nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Base is the template's scheme and host: the only place it fetches from.
func (t *Template) Base() string { return t.base }

// String is the template as written.
func (t *Template) String() string { return t.raw }

// Fill returns the URL for an event. A placeholder the event lacks is an
// error wrapping ErrNoResource: no retry can fill it.
func (t *Template) Fill(h http.Header, body []byte) (string, error) {
	req := &location.Request{Header: h, Body: body}
	var b strings.Builder
	for _, p := range t.parts {
		if p.loc == nil {
			b.WriteString(p.lit)
			continue
		}
		v, err := p.loc.Find(req)
		if err != nil || v == "" {
			return "", fmt.Errorf("refetch_url {%s}: not in the event: %w", p.spec, ErrNoResource)
		}
		if p.query {
			b.WriteString(url.QueryEscape(v))
		} else {
			b.WriteString(url.PathEscape(v))
		}
	}
	return b.String(), nil
}
