// Package receiver is hookbox's HTTP side: POST /hooks/{source} verifies a
// webhook's signature on the raw bytes, finds its event id and hands it to
// the store, answering only after the store says the write is durable.
package receiver

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"hookbox/location"
	"hookbox/provider"
)

// Event is a verified webhook, ready to store.
type Event struct {
	Source      string
	EventID     string
	Type        string
	ContentType string
	ReceivedAt  time.Time
	Headers     http.Header
	Body        []byte
	// OrderKey is the resource the event is about ("" = none: no lane);
	// OrderVersion its version as found, OrderRank the version's
	// comparable form ("" when missing or unreadable: receipt order).
	OrderKey, OrderVersion, OrderRank string
	// Verified says which of the source's secrets verified the event;
	// none (Of 0) for a source that checks nothing.
	Verified provider.Match
}

// Result is what the store did with an event.
type Result struct {
	Duplicate bool
	Conflict  bool // a duplicate whose body differs
}

// Store durably stores events. Ingest returns only after the write is
// durable; an error means nothing was written.
type Store interface {
	Ingest(ctx context.Context, e *Event) (Result, error)
}

// Source is one configured sender; NewSource builds it from its provider.
type Source struct {
	Name      string
	Verifier  provider.Verifier
	EventID   location.Location
	EventType location.Location
	// OrderKey and OrderVersion find an event's order key and version;
	// empty when the source has none.
	OrderKey, OrderVersion location.Location
	MaxBody                int64 // 0: the server's
	// Handshake, if set, is asked about each verified request before its
	// event id is looked for: a request it answers (Slack's
	// url_verification, Zoom's endpoint.url_validation, ...) gets its reply
	// with 200 and is not stored.
	Handshake provider.Handshaker
	// PublicURL is the URL the provider calls, for a verifier that signs
	// it (a provider.RequestVerifier); "" means the URL as received.
	PublicURL string
	// Redact lists headers whose values are secrets (a token, a signature
	// under a name of the user's choosing): they are stored as
	// "[redacted]", as are those credentialHeader recognises.
	Redact []string
}

// Config configures a Server.
type Config struct {
	Sources []Source
	// AnySource accepts any /hooks/{name} unsigned, with event id and type
	// found automatically (the no-config local sink).
	AnySource bool
	MaxBody   int64

	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int

	// Ready, if set, answers GET /readyz: nil is 200, an error 503 with
	// its message as the reason. Unset, /readyz answers as /healthz.
	Ready func() error
	// Fallback, if set, serves every path the webhook routes (/hooks/,
	// /healthz, /readyz) do not: the local sink shares its loopback
	// listener with the admin routes. Unset, they are 404.
	Fallback http.Handler
	Now      func() time.Time
	// RefusedLogBurst is how many refused-signature warnings may be logged
	// in each 10 s window (default 10); the rest are counted.
	RefusedLogBurst int
	// OnAnswer, if set, is called after each webhook request is answered
	// (the local sink prints a line for each).
	OnAnswer func(Answer)
	// Observe, if set, is also called after each webhook request is
	// answered (the metrics).
	Observe func(Answer)
	// Admit, if set, is asked before each webhook's body is read: an
	// error (an admission budget exceeded) answers 503 with Retry-After
	// and its message, and nothing is read or written. It must be cheap:
	// every request asks.
	Admit func() error

	Logger zerolog.Logger
}

// Answer is how one request to /hooks/ was answered.
type Answer struct {
	At      time.Time // when it came in
	Source  string
	EventID string // "" when the request was refused before its id was read
	Type    string
	Status  int    // the HTTP status sent
	Result  string // "accepted" or "duplicate" for a 200; "" otherwise
	Size    int    // body bytes read
	// Reason says why a request was not stored: for a 4xx "signature",
	// "unknown_source", "method", "too_large" or "bad_request"; for a 503
	// "budget" (an admission budget), "store" or "gone" (the sender left).
	Reason string
	Took   time.Duration // from the request's arrival to its answer
}

// Counters are the receiver's running totals.
type Counters struct {
	Accepted   atomic.Int64
	Duplicates atomic.Int64
	Conflicts  atomic.Int64
	Rejected   atomic.Int64 // 4xx
	Failed     atomic.Int64 // 503
}

// Server receives webhooks.
type Server struct {
	cfg      Config
	sources  map[string]*Source
	store    Store
	log      zerolog.Logger
	auto     *Source // the local sink's: any name, unsigned, ids found or made up
	http     *http.Server
	ln       net.Listener
	Counters Counters
	refused  logLimit // warnings for refused signatures
}

// logLimit lets at most burst lines through in each logWindow; the
// rest are counted, and the next line let through says how many. A flood
// of forged requests then costs no more log (and journald rate limit)
// than a few lines a window, and real warnings still get through.
type logLimit struct {
	burst      int
	mu         sync.Mutex
	start      time.Time
	n          int
	suppressed int
}

const logWindow = 10 * time.Second

// allow reports whether a line may be logged at now, and how many were
// held back since the last one that was.
func (l *logLimit) allow(now time.Time) (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.start) >= logWindow {
		l.start, l.n = now, 0
	}
	if l.n >= l.burst {
		l.suppressed++
		return false, 0
	}
	l.n++
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

var sourceName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// New returns a server storing into st.
func New(cfg Config, st Store) *Server {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 1 << 20
	}
	s := &Server{cfg: cfg, store: st, log: cfg.Logger, sources: make(map[string]*Source, len(cfg.Sources))}
	s.refused.burst = cmp.Or(cfg.RefusedLogBurst, 10)
	for i := range cfg.Sources {
		src := &cfg.Sources[i]
		if src.MaxBody <= 0 {
			src.MaxBody = cfg.MaxBody
		}
		s.sources[src.Name] = src
	}
	if cfg.AnySource {
		id, _ := location.Parse("auto", location.ID)
		typ, _ := location.Parse("auto", location.Type)
		s.auto = &Source{EventID: id, EventType: typ, MaxBody: cfg.MaxBody}
	}
	s.http = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: orDefault(cfg.ReadHeaderTimeout, 5*time.Second),
		ReadTimeout:       orDefault(cfg.ReadTimeout, 30*time.Second),
		WriteTimeout:      orDefault(cfg.WriteTimeout, 30*time.Second),
		IdleTimeout:       orDefault(cfg.IdleTimeout, 120*time.Second),
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		// net/http's own complaints (an accept error, a handler's panic) go
		// through the same logger: left nil, it writes to stderr directly,
		// and a stalled stderr would stall the accept loop.
		ErrorLog: log.New(httpErrorLog{s.log}, "", 0),
	}
	if s.http.MaxHeaderBytes <= 0 {
		s.http.MaxHeaderBytes = 64 << 10
	}
	return s
}

// httpErrorLog writes net/http's error lines as warnings.
type httpErrorLog struct{ log zerolog.Logger }

func (l httpErrorLog) Write(p []byte) (int, error) {
	l.log.Warn().Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Listen binds addr, so that a bind error surfaces at once.
func (s *Server) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", addr, err)
	}
	s.ln = ln
	return nil
}

// UseListener makes s serve on ln, bound by its caller, instead of Listen.
func (s *Server) UseListener(ln net.Listener) { s.ln = ln }

// Unbind closes the listener of a server that never got to Serve (a start
// that failed after Listen), so that its address is free again.
func (s *Server) Unbind() error {
	if s.ln == nil {
		return nil
	}
	return s.ln.Close()
}

// Addr is the bound address (useful with port 0).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves until Shutdown; it returns nil after a clean shutdown.
func (s *Server) Serve() error {
	if err := s.http.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// Shutdown stops accepting connections and waits for in-flight requests
// (and so their commits) until ctx ends.
//
// Requests still in flight when ctx ends (a sender uploading slowly) are
// cut off: their connections are closed, they get no answer, and the
// sender sends again. Shutdown then returns ErrCutOff.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		s.http.Close()
		return ErrCutOff
	}
	return err
}

// ErrCutOff reports that Shutdown closed requests still in flight at its
// deadline.
var ErrCutOff = errors.New("requests still in flight at the shutdown deadline were cut off")

// Error is an HTTP error with a message safe to send.
type Error struct {
	Status     int
	Msg        string
	RetryAfter int // seconds, for 503
	Err        error
	// Reason is the Answer's Reason; "" means the status's usual one.
	Reason string
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}
func (e *Error) Unwrap() error { return e.Err }

// ServeHTTP routes requests. Paths are matched on the decoded path without
// cleaning, so /hooks/../x and /hooks/%2e%2e are unknown sources, never
// another route.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/healthz":
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	case r.URL.Path == "/readyz":
		s.ready(w)
	case strings.HasPrefix(r.URL.Path, "/hooks/"):
		s.handleHook(w, r)
	case s.cfg.Fallback != nil:
		s.cfg.Fallback.ServeHTTP(w, r)
	default:
		s.writeError(w, r, &Error{Status: http.StatusNotFound, Msg: "not found: webhooks are received at POST /hooks/{source}"})
	}
}

// ready answers /readyz: 200 while the store takes writes, the workers
// run and no admission budget is exceeded, else 503 saying which.
func (s *Server) ready(w http.ResponseWriter) {
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(); err != nil {
			w.Header().Set("Retry-After", "5")
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": err.Error()})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

type acceptBody struct {
	Status  string `json:"status"`
	EventID string `json:"event_id"`
}

func (s *Server) handleHook(w http.ResponseWriter, r *http.Request) {
	if s.cfg.OnAnswer == nil && s.cfg.Observe == nil {
		s.hook(w, r)
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	a := Answer{At: s.cfg.Now(), Source: strings.TrimPrefix(r.URL.Path, "/hooks/")}
	ev, result := s.hook(sw, r)
	a.Status, a.Result, a.Reason = sw.status, result, sw.reason
	a.Took = s.cfg.Now().Sub(a.At)
	if ev != nil {
		a.EventID, a.Type, a.Size = ev.EventID, ev.Type, len(ev.Body)
	}
	if s.cfg.Observe != nil {
		s.cfg.Observe(a)
	}
	if s.cfg.OnAnswer != nil {
		s.cfg.OnAnswer(a)
	}
}

// statusWriter remembers the status a handler sent, and why a request
// was refused.
type statusWriter struct {
	http.ResponseWriter
	status int
	reason string
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// hook answers one webhook request. It returns the event once read (nil
// before), and "accepted" or "duplicate" when it was answered 200.
func (s *Server) hook(w http.ResponseWriter, r *http.Request) (*Event, string) {
	name := strings.TrimPrefix(r.URL.Path, "/hooks/")
	src, err := s.source(name)
	if err != nil {
		s.writeError(w, r, err)
		return nil, ""
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.writeError(w, r, &Error{Status: http.StatusMethodNotAllowed, Msg: "method " + r.Method + " not allowed: use POST"})
		return nil, ""
	}
	if s.cfg.Admit != nil {
		if err := s.cfg.Admit(); err != nil {
			s.writeError(w, r, &Error{Status: http.StatusServiceUnavailable, Msg: err.Error() + "; nothing was kept, send it again later", RetryAfter: 30, Reason: "budget"})
			return nil, ""
		}
	}
	ev, err := s.read(w, r, src, name)
	if err != nil {
		s.writeError(w, r, err)
		return nil, ""
	}
	if ev == nil {
		return nil, "" // answered (Slack url_verification)
	}
	res, err := s.store.Ingest(r.Context(), ev)
	if gone := r.Context().Err(); err != nil && gone != nil && errors.Is(err, gone) {
		// The sender closed its side while its event waited for the
		// writer, which skips a write whose request is gone: nothing was
		// kept, and the store is fine (not counted as unavailable). A
		// sender that only half-closed still reads: it must get a 503, as
		// returning without an answer would send it an empty 200.
		s.log.Info().Str("source", ev.Source).Str("event_id", ev.EventID).Str("remote", r.RemoteAddr).
			Msg("the sender closed the connection before its event was stored; nothing was kept, it sends again")
		w.Header().Set("Retry-After", "5")
		if sw, ok := w.(*statusWriter); ok {
			sw.reason = "gone"
		}
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the connection closed before the event was stored; nothing was kept, send it again"})
		return ev, ""
	}
	if err != nil {
		s.writeError(w, r, &Error{Status: http.StatusServiceUnavailable, Msg: "could not store the event; nothing was kept, send it again", RetryAfter: 5, Err: err})
		return ev, ""
	}
	status := "accepted"
	if res.Duplicate {
		status = "duplicate"
		s.Counters.Duplicates.Add(1)
		if res.Conflict {
			s.Counters.Conflicts.Add(1)
			s.log.Warn().Str("source", ev.Source).Str("event_id", ev.EventID).Msg("redelivery with a different body (kept the first)")
		}
	} else {
		s.Counters.Accepted.Add(1)
	}
	writeJSON(w, http.StatusOK, acceptBody{Status: status, EventID: ev.EventID})
	return ev, status
}

func (s *Server) source(name string) (*Source, error) {
	if src, ok := s.sources[name]; ok {
		return src, nil
	}
	if s.auto != nil && sourceName.MatchString(name) && name != "." && name != ".." {
		return s.auto, nil
	}
	return nil, &Error{Status: http.StatusNotFound, Msg: "unknown source " + strconv.Quote(name)}
}

// verifyHint is what the operator should check after a failed signature
// check, for the log only: the sender's answer does not name configuration.
func verifyHint(err error) error {
	switch {
	case errors.Is(err, provider.ErrMismatch):
		return errors.New("no secret of this source matches: compare its secret (or secret_env) with the sender's signing secret")
	case errors.Is(err, provider.ErrTimestamp):
		return errors.New("check the sender's and this host's clocks, or raise the source's tolerance")
	}
	return nil
}

// read reads, verifies and identifies a request. It returns nil, nil when
// it has answered the request itself.
func (s *Server) read(w http.ResponseWriter, r *http.Request, src *Source, name string) (*Event, error) {
	if r.ContentLength > src.MaxBody {
		return nil, &Error{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("body of %d bytes is over the limit of %d", r.ContentLength, src.MaxBody)}
	}
	body, err := readBody(w, r, src.MaxBody)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	match, err := verify(src, r, body, now)
	if err != nil {
		return nil, &Error{Status: http.StatusUnauthorized, Msg: "signature check failed: " + err.Error(), Err: verifyHint(err)}
	}
	// Decoded as JSON once, if a location or the handshake asks: a source
	// whose id and type come from headers never pays for it. The request
	// a handshake is given escapes to the heap; the one of a source
	// without a handshake stays on the stack.
	local := location.Request{Header: r.Header, Body: body}
	req := &local
	if src.Handshake != nil {
		hreq := &location.Request{Header: r.Header, Body: body}
		if reply, ok := src.Handshake(hreq); ok {
			w.Header().Set("Content-Type", reply.ContentType)
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(reply.Body)
			return nil, nil
		}
		req = hreq // what it decoded serves the locations
	}
	id, err := src.EventID.Find(req)
	if err != nil && src == s.auto {
		// The local sink stores whatever it gets: a request carrying no
		// id gets a made-up one (and so is never a duplicate).
		id, err = generatedID(), nil
	}
	if err != nil {
		return nil, &Error{Status: http.StatusBadRequest, Msg: "no event id: looked in " + src.EventID.String() + detail(err)}
	}
	if err := validValue(id); err != nil {
		return nil, &Error{Status: http.StatusBadRequest, Msg: "event id from " + src.EventID.String() + " " + err.Error()}
	}
	typ := ""
	if len(src.EventType) > 0 {
		// The type is optional: a verified event whose id was found is kept
		// even when its body is not the JSON the type location expects
		// (a Slack slash command is form-encoded), or when the type found
		// is not storable (too long, control characters). It is stored
		// untyped: refusing it would refuse the event at every resend.
		typ, _ = src.EventType.Find(req)
		if err := validValue(typ); err != nil {
			s.log.Warn().Str("source", src.Name).Str("event_id", id).
				Msg("event type from " + src.EventType.String() + " " + err.Error() + ": stored without a type")
			typ = ""
		}
	}
	// The request's own map is stored (it is encoded before Ingest
	// returns), its credentials replaced in place: the signature was
	// checked above and nothing reads them after this, and a copy of every
	// signed request's headers would cost an allocation an ack.
	headers := r.Header
	for k := range headers {
		if credentialHeader(k) {
			headers[k] = redacted
		}
	}
	for _, h := range src.Redact {
		if k := http.CanonicalHeaderKey(h); len(headers[k]) > 0 {
			headers[k] = redacted
		}
	}
	source := src.Name
	if src == s.auto {
		source = name
	}
	ev := &Event{
		Source:      source,
		EventID:     id,
		Type:        typ,
		ContentType: r.Header.Get("Content-Type"),
		ReceivedAt:  now,
		Headers:     headers,
		Body:        body,
		Verified:    match,
	}
	if len(src.OrderKey) > 0 {
		s.orderOf(src, req, ev)
	}
	return ev, nil
}

// verify checks a request's signature with its source's verifier, and
// says which secret verified it: through CheckRequest for a scheme that
// signs more than the headers and the body, so that only such a source
// pays for building the request's URL.
func verify(src *Source, r *http.Request, body []byte, now time.Time) (provider.Match, error) {
	switch v := src.Verifier.(type) {
	case nil:
		return provider.Match{}, nil
	case provider.RequestVerifier:
		return provider.CheckRequest(v, &provider.Request{Method: r.Method, URL: requestURL(r, src.PublicURL), Header: r.Header, Body: body}, now)
	default:
		return provider.Check(v, r.Header, body, now)
	}
}

// requestURL is the URL the provider called: public, when the source says
// it, followed by the query as received; else http://<Host header> and the
// request URI as received (https:// for a TLS connection), which is what
// the provider called when nothing between it and hookbox changes them.
func requestURL(r *http.Request, public string) string {
	if public != "" {
		if r.URL.RawQuery == "" {
			return public
		}
		return public + "?" + r.URL.RawQuery
	}
	uri := r.RequestURI
	switch {
	case uri == "":
		uri = r.URL.RequestURI()
	case !strings.HasPrefix(uri, "/"):
		return uri // the absolute form a proxy sends: the URL itself
	}
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	return scheme + r.Host + uri
}

func detail(err error) string {
	if errors.Is(err, location.ErrNotFound) {
		return ""
	}
	return ": " + err.Error()
}

// generatedID is an event id for a request that carries none.
func generatedID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "gen_" + hex.EncodeToString(b[:])
}

// credentialHeader reports whether a header's value is a credential or a
// signature, never stored: Authorization, Cookie, and names holding token,
// secret, password, api-key, signature or hmac. A signature stored would be
// replay material for the schemes that sign no id or timestamp (GitHub,
// Shopify); the source's own token header is redacted by name (Redact).
func credentialHeader(name string) bool {
	var buf [64]byte
	lower := buf[:0] // a byte copy: a string(…) of it could allocate
	if len(name) > len(buf) {
		lower = make([]byte, 0, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower = append(lower, c)
	}
	switch string(lower) { // compared, not converted
	case "authorization", "proxy-authorization", "cookie", "set-cookie":
		return true
	}
	for _, part := range credentialParts {
		if bytes.Contains(lower, part) {
			return true
		}
	}
	return false
}

// redacted is the stored value of a credential header (shared: never
// appended to or changed).
var redacted = []string{"[redacted]"}

var credentialParts = [][]byte{[]byte("token"), []byte("secret"), []byte("password"), []byte("passwd"), []byte("api-key"),
	[]byte("apikey"), []byte("api_key"), []byte("signature"), []byte("hmac"), []byte("credential")}

// initialBody is the most readBody reserves before the bytes arrive; a
// larger body grows the buffer as it comes (webhooks are mostly a few KiB).
const initialBody = 64 << 10

// readBody reads at most limit bytes, answering 413 past it whatever the
// Content-Length claimed.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	rd := http.MaxBytesReader(w, r.Body, limit)
	n := r.ContentLength
	if n < 0 || n > limit {
		n = 512
	}
	// A Content-Length is a claim: memory follows the bytes that arrive.
	// Reserving a claimed 1 MiB up front let a client that sends only
	// headers hold 1 MiB a connection, unsigned, for the read timeout.
	buf := make([]byte, 0, min(n, initialBody)+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return nil, &Error{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("body is over the limit of %d bytes", limit)}
			}
			return nil, &Error{Status: http.StatusBadRequest, Msg: "could not read the body", Err: err}
		}
	}
}

// writeError is the one place errors become HTTP answers: the sender gets
// the short message, the log gets the detail.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Status: http.StatusInternalServerError, Msg: "internal error", Err: err}
	}
	ev := s.log.Debug()
	switch {
	case e.Status >= 500:
		s.Counters.Failed.Add(1)
		ev = s.log.Error()
	case e.Status == http.StatusUnauthorized:
		s.Counters.Rejected.Add(1)
		ok, held := s.refused.allow(s.cfg.Now())
		switch {
		case !ok:
			ev = nil // hookbox_rejected_total still counts it
		case held > 0:
			ev = s.log.Warn().Int("not_logged_before", held)
		default:
			ev = s.log.Warn()
		}
	default:
		s.Counters.Rejected.Add(1)
	}
	ev.Int("status", e.Status).Str("path", r.URL.Path).Str("remote", r.RemoteAddr).AnErr("cause", e.Err).Msg(e.Msg)
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if sw, ok := w.(*statusWriter); ok {
		sw.reason = cmp.Or(e.Reason, reasonOf(e.Status))
	}
	writeJSON(w, e.Status, map[string]string{"error": e.Msg})
}

// reasonOf is the Answer's Reason for a refusal with status.
func reasonOf(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "signature"
	case http.StatusNotFound:
		return "unknown_source"
	case http.StatusMethodNotAllowed:
		return "method"
	case http.StatusRequestEntityTooLarge:
		return "too_large"
	case http.StatusServiceUnavailable:
		return "store"
	}
	if status >= 500 {
		return "internal"
	}
	return "bad_request"
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
