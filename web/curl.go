package web

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"hookbox/provider"
	"hookbox/replay"
)

// Curl is a command that sends a stored request again.
type Curl struct {
	Command string `json:"command"`
	// Signed says the command carries a signature made now with the
	// source's first secret; else it carries what was stored.
	Signed   bool     `json:"signed"`
	Warnings []string `json:"warnings,omitempty"`
}

// hopHeaders are a request's headers that belong to its connection, not
// to the webhook, and that curl sets itself.
var hopHeaders = []string{"Host", "Content-Length", "Connection", "Transfer-Encoding", "Accept-Encoding", "Keep-Alive",
	"Te", "Trailer", "Upgrade", "Proxy-Authorization", "Proxy-Connection"}

// maxInlineBody is the largest body the command holds itself; a longer
// one, or bytes a shell word cannot hold, is piped from the API.
const maxInlineBody = 64 << 10

// curl is the command that POSTs event id to target: re-signed where the
// source's scheme has a signer and its secret is at hand, else with the
// stored headers and a warning saying what the receiver may refuse.
func (h *Handler) curl(r *http.Request, id int64, target string) (Curl, error) {
	u, err := url.Parse(target)
	if target == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Curl{}, &replay.FieldError{Field: "url", Msg: fmt.Sprintf("%q: want an absolute http:// or https:// URL", target)}
	}
	e, err := h.store.GetEvent(r.Context(), id)
	if err != nil {
		return Curl{}, err
	}
	if e.Swept {
		return Curl{}, &replay.FieldError{Field: "id", Msg: fmt.Sprintf("event %d: its body and headers were removed by retention", id)}
	}
	hdr := http.Header{}
	var redacted []string
	for k, vs := range e.Headers {
		if slices.Contains(hopHeaders, http.CanonicalHeaderKey(k)) {
			continue
		}
		if len(vs) == 1 && vs[0] == redactedValue {
			redacted = append(redacted, k)
			continue
		}
		hdr[k] = slices.Clone(vs)
	}
	if hdr.Get("Content-Type") == "" && e.ContentType != "" {
		hdr.Set("Content-Type", e.ContentType)
	}
	req := &provider.Request{Method: http.MethodPost, URL: target, Header: hdr, Body: slices.Clone(e.Body)}
	var c Curl
	o, known := h.opt.Sources[e.Source]
	p, _ := provider.Lookup(o.Scheme)
	switch {
	case !known:
		c.Warnings = append(c.Warnings, "the signature headers are the ones stored at receipt: this hookbox has no secret for "+e.Source+
			", so the command cannot sign afresh, and a receiver that checks a signed timestamp refuses it once its tolerance has passed")
	case p.Unsigned:
	default:
		signer, err := provider.NewSigner(o)
		if err == nil {
			err = signer.Sign(req, h.opt.Now())
		}
		if err != nil {
			c.Warnings = append(c.Warnings, "not signed afresh ("+err.Error()+"): the signature headers are the ones stored at receipt, which may be stale")
		} else {
			c.Signed = true
		}
	}
	slices.Sort(redacted)
	for _, k := range redacted {
		if req.Header.Get(k) == "" {
			c.Warnings = append(c.Warnings, k+" was not stored (hookbox never keeps a credential): add it, or the receiver may refuse the request")
		}
	}
	var b strings.Builder
	body := req.Body
	inline := len(body) <= maxInlineBody && utf8.Valid(body) && !strings.ContainsRune(string(body), 0)
	if !inline {
		fmt.Fprintf(&b, "curl -sS %s |\n  ", shellQuote(adminURL(r, fmt.Sprintf("/api/events/%d/body", id))))
	}
	fmt.Fprintf(&b, "curl -sS -X POST %s", shellQuote(req.URL))
	keys := make([]string, 0, len(req.Header))
	for k := range req.Header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range req.Header[k] {
			fmt.Fprintf(&b, " \\\n  -H %s", shellQuote(k+": "+v))
		}
	}
	if inline {
		fmt.Fprintf(&b, " \\\n  --data-binary %s", shellQuote(string(body)))
	} else {
		b.WriteString(" \\\n  --data-binary @-")
		if c.Signed && !slices.Equal(body, e.Body) {
			c.Warnings = append(c.Warnings, "the signer changed the body, and the piped body is the stored one: the signature will not match")
		}
	}
	c.Command = b.String()
	return c, nil
}

// redactedValue is what the receiver stores for a credential header.
const redactedValue = "[redacted]"

// shellQuote is s as one POSIX shell word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// adminURL is path on the address the request came to.
func adminURL(r *http.Request, path string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + path
}
