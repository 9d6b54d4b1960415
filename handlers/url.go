package handlers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"hookbox/provider"
)

const (
	// responseKeep is how much of a response body is kept in Result.Output.
	responseKeep = 4 << 10
	// responseDrain is how much more is read and thrown away so the connection can be
	// reused; a larger body costs a new connection rather than an unbounded read.
	responseDrain = 64 << 10
	// maxRetryAfter caps a target's Retry-After so a bad header cannot park a delivery forever.
	maxRetryAfter = 24 * time.Hour
)

// URL delivers to an HTTP(S) endpoint with a POST. It is safe for concurrent use; its
// connections are pooled per URL value.
type URL struct {
	raw       string
	err       error // from NewURL's checks, returned by every attempt
	timeout   time.Duration
	permanent []int // statuses that fail permanently
	client    *http.Client
	// signer and target, when set, sign each delivery (SignWith).
	signer *provider.StandardSigner
	target string
}

// SignWith makes every delivery carry Standard Webhooks headers signed by
// s: webhook-id (the same for every attempt of one event to this target,
// named target), webhook-timestamp (each attempt's) and webhook-signature
// over the exact bytes sent.
func (u *URL) SignWith(target string, s *provider.StandardSigner) {
	u.target, u.signer = target, s
}

// NewURL returns a target that POSTs to rawURL, each attempt bounded by timeout
// (DefaultTimeout if timeout <= 0). An answer with one of the permanent statuses
// fails as a Permanent *Error; any other non-2xx answer, as one to retry. An
// unusable rawURL is not reported here but by every Deliver and Post, as an *Error.
func NewURL(rawURL string, timeout time.Duration, permanent ...int) *URL {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	u := &URL{raw: rawURL, timeout: timeout, permanent: slices.Clone(permanent)}
	switch p, err := url.Parse(rawURL); {
	case err != nil:
		// url.Error repeats the URL, which may carry credentials; keep only the reason.
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		u.err = fmt.Errorf("invalid url: %w", err)
	case p.Scheme != "http" && p.Scheme != "https":
		u.err = fmt.Errorf("invalid url: scheme %q is not http or https", p.Scheme)
	case p.Host == "":
		u.err = errors.New("invalid url: no host")
	}
	dialer := &net.Dialer{Timeout: min(timeout, 30*time.Second), KeepAlive: 30 * time.Second}
	u.client = &http.Client{
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          128,
			MaxIdleConnsPerHost:   64, // a worker pool hammering one local sink reuses its connections
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
		Timeout: timeout,
		// A redirect is an answer, not a success: following it would POST the payload
		// somewhere the configuration never named.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return u
}

// Deliver POSTs d.Body byte-exact with d.ContentType and the Hookbox-Event-Id,
// Hookbox-Source, Hookbox-Attempt and Idempotency-Key headers (and
// Hookbox-Refetched for a refetched body). A 2xx answer is success.
// Any other status, a timeout, a network error, a canceled ctx or a value that cannot
// travel in a header returns a non-nil *Error; the Result is filled as far as the attempt got.
func (u *URL) Deliver(ctx context.Context, d Delivery) (Result, error) {
	h := make(http.Header, 6)
	for _, f := range [...]struct{ name, what, value string }{
		{"Hookbox-Event-Id", "event id", d.EventID},
		{"Hookbox-Source", "source", d.Source},
		{"Hookbox-Attempt", "attempt", strconv.Itoa(d.Attempt)},
		{"Idempotency-Key", "idempotency key", d.Source + ":" + d.EventID},
	} {
		if !validHeaderValue(f.value) {
			return Result{ExitCode: -1}, &Error{Msg: f.what + " contains a control character and cannot be sent in a header"}
		}
		h[f.name] = []string{f.value}
	}
	if d.Refetched != "" {
		h["Hookbox-Refetched"] = []string{d.Refetched}
	}
	if u.signer != nil {
		id := d.Source + ":" + d.EventID + ":" + u.target
		ts, sig := u.signer.Sign(id, time.Now(), d.Body)
		h["Webhook-Id"], h["Webhook-Timestamp"], h["Webhook-Signature"] = []string{id}, []string{ts}, []string{sig}
	}
	return u.post(ctx, d.ContentType, d.Body, h)
}

// Post sends body with contentType (omitted if "") under the same client rules as
// Deliver, without the per-delivery headers. It returns the same kinds of *Error.
func (u *URL) Post(ctx context.Context, contentType string, body []byte) (Result, error) {
	return u.post(ctx, contentType, body, make(http.Header, 2))
}

func (u *URL) post(ctx context.Context, contentType string, body []byte, h http.Header) (Result, error) {
	res := Result{ExitCode: -1}
	if u.err != nil {
		return res, &Error{Msg: u.err.Error(), Err: u.err}
	}
	if contentType != "" {
		if !validHeaderValue(contentType) {
			return res, &Error{Msg: "content type contains a control character and cannot be sent in a header"}
		}
		h["Content-Type"] = []string{contentType}
	}
	h["User-Agent"] = []string{"hookbox"}

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.raw, bytes.NewReader(body))
	if err != nil {
		return res, &Error{Msg: "build request: " + err.Error(), Err: err}
	}
	req.Header = h

	start := time.Now()
	resp, err := u.client.Do(req)
	if err != nil {
		res.Duration = time.Since(start)
		return res, u.requestError(ctx, err)
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	res.Output = readBounded(resp.Body)
	res.Duration = time.Since(start)

	// The status line is the target's verdict; a body cut short afterwards does not undo a 2xx.
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return res, nil
	}
	e := &Error{
		Msg:        "status " + strconv.Itoa(resp.StatusCode),
		Permanent:  slices.Contains(u.permanent, resp.StatusCode),
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
	}
	switch {
	case e.Permanent:
		e.Msg += " (permanent_status)"
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		e.Msg += " (redirects are not followed)"
	}
	return res, e
}

// requestError turns a failed client.Do into the short message users see.
func (u *URL) requestError(ctx context.Context, err error) *Error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return &Error{Msg: "canceled", Err: ctxErr}
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return &Error{Msg: "timeout after " + u.timeout.String(), Err: err}
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return &Error{Msg: "connection refused", Err: err}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		// net/http says only "EOF" or "connection reset by peer".
		return &Error{Msg: "the target closed the connection without answering", Err: err}
	}
	msg := err.Error()
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		// Drop the `Post "http://…":` prefix; the target's URL is shown next to the error anyway.
		msg = ue.Err.Error()
	}
	// A certificate error stays retried: a certificate that expired or does not
	// match is mended on the target's side (a renewal, a fixed name) and the
	// delivery then goes through; giving up at once would lose it for good.
	return &Error{Msg: msg, Err: err}
}

// readBounded keeps the head of a response body and drains a bounded amount more, so a
// well-behaved target's connection goes back to the pool and a huge one costs no memory.
func readBounded(body io.Reader) string {
	bp := keepBufs.Get().(*[responseKeep]byte)
	defer keepBufs.Put(bp)
	n, _ := io.ReadFull(body, bp[:])
	out := strings.ToValidUTF8(string(bp[:n]), "\uFFFD")
	if n < responseKeep {
		return out
	}
	drained, _ := io.Copy(io.Discard, io.LimitReader(body, responseDrain+1))
	if drained == 0 {
		return out
	}
	if drained > responseDrain {
		return out + omittedMarker(responseDrain, true)
	}
	return out + omittedMarker(drained, false)
}

// keepBufs holds the buffers readBounded reads a response's head into: most
// answers are a few bytes, and a fresh 4 KiB buffer a delivery is garbage.
var keepBufs = sync.Pool{New: func() any { return new([responseKeep]byte) }}

// parseRetryAfter reads delay-seconds or an HTTP-date (RFC 9110 §10.2.3). Garbage,
// negative and past values give 0; anything longer than maxRetryAfter is capped.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		// A number too large for int64 is still a number: the cap applies.
		if secs <= 0 {
			return 0
		}
		if secs > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	if d <= 0 {
		return 0
	}
	return min(d, maxRetryAfter)
}

// validHeaderValue rejects control characters other than tab (RFC 9110 §5.5): a CR or
// LF from a provider-chosen event id must never split a header.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
