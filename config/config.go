// Package config decodes and validates hookbox's TOML configuration.
//
// A config is decoded over DefaultConfig, so absent keys keep their defaults.
// Load and Parse report every problem at once, each as a *ValidationError
// naming the key and, where it can be found, its line.
package config

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Config is the whole hookbox configuration.
type Config struct {
	Server    Server    `toml:"server"`
	Store     Store     `toml:"store"`
	Delivery  Delivery  `toml:"delivery"`
	Alert     Alert     `toml:"alert"`
	Retention Retention `toml:"retention"`
	Health    Health    `toml:"health"`
	Admin     Admin     `toml:"admin"`
	Sources   []Source  `toml:"source"`
	Targets   []Target  `toml:"target"`
}

// TargetNames names the [[target]] tables, in order.
func (c Config) TargetNames() []string {
	names := make([]string, len(c.Targets))
	for i, t := range c.Targets {
		names[i] = t.Name
	}
	return names
}

// Server configures the HTTP receiver.
//
// Unlike the no-config mode, which only ever listens on loopback, a config
// may set Listen to any address: writing one is the explicit opt-in. A config
// without any [[source]] still accepts every request unsigned, so Parse only
// allows that on a loopback address.
type Server struct {
	Listen            string   `toml:"listen"`              // default "127.0.0.1:8080"
	MaxBody           Size     `toml:"max_body"`            // default 1MiB
	MaxHeaderBytes    Size     `toml:"max_header_bytes"`    // default 64KiB
	ReadHeaderTimeout Duration `toml:"read_header_timeout"` // default 5s
	ReadTimeout       Duration `toml:"read_timeout"`        // default 30s
	WriteTimeout      Duration `toml:"write_timeout"`       // default 30s
	IdleTimeout       Duration `toml:"idle_timeout"`        // default 120s
	ShutdownTimeout   Duration `toml:"shutdown_timeout"`    // default 10s
}

// Store configures the database: SQLite at Path (the default engine), or
// PostgreSQL at URL or at the URL in the environment variable URLEnv.
// Exactly one of the three is set; with URL or URLEnv, Path is "".
type Store struct {
	Path        string `toml:"path"`        // default "hookbox.db", relative to the working directory
	URL         string `toml:"url"`         // postgres://…; never logged or echoed
	URLEnv      string `toml:"url_env"`     // the variable holding a postgres:// URL
	Synchronous string `toml:"synchronous"` // SQLite: "full" (default) | "normal" | "off"; lowercased by Parse
	// MaxQueued and MinFreeDisk are the admission budgets: above
	// MaxQueued waiting deliveries, or under MinFreeDisk free on the
	// store's file system (SQLite), new webhooks get 503.
	MaxQueued   int64 `toml:"max_queued"`    // default DefaultMaxQueued
	MinFreeDisk Size  `toml:"min_free_disk"` // default 0: no disk budget
}

// PostgreSQL reports whether the store is a PostgreSQL database.
func (s Store) PostgreSQL() bool { return s.URL != "" || s.URLEnv != "" }

// DatabaseURL is the PostgreSQL store's URL: URL, or the value of URLEnv
// read through getenv. The error names the variable, never a value.
func (s Store) DatabaseURL(getenv func(string) string) (string, error) {
	if s.URLEnv == "" {
		return s.URL, nil
	}
	v := getenv(s.URLEnv)
	if v == "" {
		return "", fmt.Errorf("store.url_env: environment variable %s is unset or empty: set it to the store's postgres:// URL", s.URLEnv)
	}
	if !postgresURL(v) {
		return "", fmt.Errorf("store.url_env: environment variable %s does not hold a postgres:// or postgresql:// URL", s.URLEnv)
	}
	return v, nil
}

// Name is the store as messages and logs show it: the path, the variable
// holding the URL, or the URL without its password and parameters.
func (s Store) Name() string {
	switch {
	case s.URLEnv != "":
		return "$" + s.URLEnv + " (PostgreSQL)"
	case s.URL != "":
		u, err := url.Parse(s.URL)
		if err != nil {
			return "(PostgreSQL)"
		}
		if u.User != nil {
			u.User = url.User(u.User.Username())
		}
		u.RawQuery, u.Fragment = "", ""
		return u.String() + " (PostgreSQL)"
	}
	return s.Path
}

// postgresURL reports whether u is a PostgreSQL connection URL.
func postgresURL(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

// Delivery configures the worker pool and the retry schedule.
type Delivery struct {
	Workers     int      `toml:"workers"`      // default 4, 1..256
	MaxAttempts int      `toml:"max_attempts"` // default 5; then the delivery is dead
	Backoff     Duration `toml:"backoff"`      // default 2s: first retry delay, doubling each attempt
	MaxBackoff  Duration `toml:"max_backoff"`  // default 10m, >= Backoff
	Lease       Duration `toml:"lease"`        // default 5m; greater than every target's timeout
	Grace       Duration `toml:"grace"`        // default 10s: how long running attempts may finish at shutdown
	// Poll is how often an idle serve looks for deliveries that another
	// process queued without waking it (default 1s). On PostgreSQL the
	// replicas wake each other (LISTEN/NOTIFY), and while that connection
	// is down they look at least every second whatever Poll says.
	Poll Duration `toml:"poll"`
}

// Alert is called once for each delivery that goes dead. With neither URL
// nor Command set, no alert is sent.
type Alert struct {
	URL     string     `toml:"url"`
	Command StringList `toml:"command"` // argv; URL and Command are mutually exclusive
	Timeout Duration   `toml:"timeout"` // default 10s
}

// Retention configures the sweeper.
type Retention struct {
	Payloads Duration `toml:"payloads"` // default 30d: raw bodies and headers of finished events are dropped after this
	Dedupe   Duration `toml:"dedupe"`   // default 90d: dedupe keys (event rows) are kept this long; >= Payloads
	Interval Duration `toml:"interval"` // default 1h: how often the sweeper runs
}

// Source is one [[source]]: a sender posting to /hooks/{Name}.
type Source struct {
	Name      string     `toml:"name"`       // required, unique, [A-Za-z0-9._-]{1,64}
	Verify    string     `toml:"verify"`     // a provider's name (package provider): a preset, hmac, token or none
	Secret    StringList `toml:"secret"`     // one value or a list (rotation)
	SecretEnv StringList `toml:"secret_env"` // names of environment variables holding secrets
	Insecure  bool       `toml:"insecure"`   // required true for verify = "none"
	Tolerance Duration   `toml:"tolerance"`  // 0 = scheme default (5m); only for schemes that sign a timestamp
	EventID   string     `toml:"event_id"`   // "header:Name" | "json:a.b.c" | "body-sha256" | "auto", alternatives separated by ","
	EventType string     `toml:"event_type"` // same forms except body-sha256; "" = no type (hmac, token, none only)
	Header    string     `toml:"header"`     // hmac, token: the header carrying the signature or token
	Algorithm string     `toml:"algorithm"`  // hmac: "sha256" (default) | "sha1" | "sha512"
	Encoding  string     `toml:"encoding"`   // hmac: "hex" (default) | "base64"
	Prefix    string     `toml:"prefix"`     // hmac: stripped from the header value, e.g. "sha256="
	MaxBody   Size       `toml:"max_body"`   // 0 = server.max_body
	// PublicURL is the URL the provider calls, for a scheme that signs it
	// (twilio, square, hubspot): absolute http(s), without a query (the
	// request's own is used). "" = http://<Host header><path> as received.
	PublicURL string `toml:"public_url"`
	// Silence, when set, fires an alarm when no event (new or a
	// duplicate) arrived from the source for this long.
	Silence Duration `toml:"silence"`
	// OrderKey and OrderVersion say where an event names the resource it
	// is about and that resource's version (a number or an RFC 3339 time,
	// higher = newer), in the location grammar ("header:"/"json:" only);
	// "" = the preset's, or none. The key makes an event's lane at an
	// ordered target.
	OrderKey     string `toml:"order_key"`
	OrderVersion string `toml:"order_version"`

	// Secrets holds the resolved secrets: the Secret values followed by the
	// values of the SecretEnv variables, in order. Never log it.
	Secrets []string `toml:"-"`
}

// Target is one [[target]]: where events of its sources are delivered.
type Target struct {
	Name        string            `toml:"name"`         // required, unique
	Source      string            `toml:"source"`       // set Source or Sources; each names a [[source]]
	Sources     []string          `toml:"sources"`      //
	URL         string            `toml:"url"`          // exactly one of URL and Command; absolute http(s)
	Command     []string          `toml:"command"`      // argv, never a shell string
	Env         map[string]string `toml:"env"`          // extra environment for Command
	Timeout     Duration          `toml:"timeout"`      // default 10s for URL, 30s for Command
	Events      []string          `toml:"events"`       // globs on the event type (MatchType); empty = all
	MaxAttempts int               `toml:"max_attempts"` // 0 = delivery.max_attempts
	// PermanentStatus lists the HTTP answers of a URL target that mean no
	// retry can succeed: such a delivery goes dead at once. None by default.
	PermanentStatus []int `toml:"permanent_status"`
	// SignSecretEnv names the variables holding the whsec_ secrets a URL
	// target's deliveries are signed with (Standard Webhooks), so the
	// receiving service verifies hookbox and never holds a provider's
	// secret. More than one signs with each: a rotation.
	SignSecretEnv StringList `toml:"sign_secret_env"`
	// Order is how the target's deliveries of one order key (a lane) are
	// ordered: "none" (default), "fifo", "latest" or "coalesce" (package
	// order). CoalesceWait (coalesce only) holds a lane's fresh head that
	// long for newer events.
	Order        string   `toml:"order"`
	CoalesceWait Duration `toml:"coalesce_wait"`
	// SignSecrets holds the resolved SignSecretEnv values. Never log it.
	SignSecrets []string `toml:"-"`
	// Refetch keys: deliver the resource's current state, fetched from
	// the provider's API before each attempt (refetch.go).
	Refetch        string `toml:"refetch"`          // a preset with a fetch API
	RefetchURL     string `toml:"refetch_url"`      // or a URL with {json:…} placeholders
	RefetchAuthEnv string `toml:"refetch_auth_env"` // the variable holding the API credential
	RefetchRate    string `toml:"refetch_rate"`     // "25/s"; default the provider's published limit
	RefetchBaseURL string `toml:"refetch_base_url"` // replaces the preset's API base (a proxy, a test server)
	// RefetchCredential holds the resolved RefetchAuthEnv value. Never log it.
	RefetchCredential string `toml:"-"`
	// Rate is at most how many attempts to the target start a second,
	// minute or hour (a token bucket holding one second's worth); zero:
	// no limit.
	Rate Rate `toml:"rate"`
	// Concurrency is at most how many attempts to the target run at once;
	// 0: no limit.
	Concurrency int `toml:"concurrency"`
}

// SourceNames returns the names of the sources t receives from.
func (t Target) SourceNames() []string {
	if t.Source == "" {
		return slices.Clone(t.Sources)
	}
	return append([]string{t.Source}, t.Sources...)
}

// Matches reports whether an event of the given source and type is delivered
// to t. With Events set, an event without a type never matches.
func (t Target) Matches(source, eventType string) bool {
	if source != t.Source && !slices.Contains(t.Sources, source) {
		return false
	}
	if len(t.Events) == 0 {
		return true
	}
	if eventType == "" {
		return false
	}
	for _, pat := range t.Events {
		if MatchType(pat, eventType) {
			return true
		}
	}
	return false
}

// MatchType reports whether an event type matches a target's events
// pattern, with path.Match's syntax ('*' any run of characters, '?' one,
// '[a-z]' and '[^a-z]' a class, a backslash escaping the next) except
// that '/' is an ordinary character: "*" matches every Shopify topic
// ("orders/create") as it does every other type. A bad pattern matches
// nothing; Parse refuses them.
func MatchType(pattern, eventType string) bool {
	p, n := 0, 0         // where pattern and type are matched up to
	star, from := -1, -1 // the last '*' seen, and where its run started
	for p < len(pattern) || n < len(eventType) {
		if p < len(pattern) {
			if pattern[p] == '*' {
				star, from = p, n
				p++
				continue
			}
			if n < len(eventType) {
				r, w := utf8.DecodeRuneInString(eventType[n:])
				width, matched, ok := matchOne(pattern[p:], r)
				if !ok {
					return false
				}
				if matched {
					p, n = p+width, n+w
					continue
				}
			}
		}
		// Mismatch: let the last '*' take one more character, if any.
		if star < 0 || from >= len(eventType) {
			return false
		}
		_, w := utf8.DecodeRuneInString(eventType[from:])
		from += w
		p, n = star+1, from
	}
	return true
}

// matchOne matches the pattern element at the start of pat ('?', a class,
// an escaped or a plain character) against r, and returns the element's
// width. ok is false for a malformed element.
func matchOne(pat string, r rune) (width int, matched, ok bool) {
	switch pat[0] {
	case '?':
		return 1, true, true
	case '[':
		return matchClass(pat, r)
	case '\\':
		if len(pat) < 2 {
			return 0, false, false
		}
		c, w := utf8.DecodeRuneInString(pat[1:])
		return 1 + w, c == r, true
	}
	c, w := utf8.DecodeRuneInString(pat)
	return w, c == r, true
}

// matchClass matches a class "[...]" at the start of pat against r.
func matchClass(pat string, r rune) (width int, matched, ok bool) {
	i, negated := 1, false
	if i < len(pat) && pat[i] == '^' {
		negated, i = true, i+1
	}
	for ranges := 0; ; ranges++ {
		if i < len(pat) && pat[i] == ']' && ranges > 0 {
			return i + 1, matched != negated, true
		}
		lo, w, ok := classChar(pat[i:])
		if !ok {
			return 0, false, false
		}
		i += w
		hi := lo
		if i < len(pat) && pat[i] == '-' {
			if hi, w, ok = classChar(pat[i+1:]); !ok {
				return 0, false, false
			}
			i += 1 + w
		}
		if lo <= r && r <= hi {
			matched = true
		}
	}
}

// classChar reads one character of a class: escaped, or plain but for the
// '-' and ']' that must be escaped there.
func classChar(pat string) (rune, int, bool) {
	switch {
	case pat == "", pat[0] == '-', pat[0] == ']':
		return 0, 0, false
	case pat[0] == '\\':
		if len(pat) < 2 {
			return 0, 0, false
		}
		c, w := utf8.DecodeRuneInString(pat[1:])
		return c, 1 + w, true
	}
	c, w := utf8.DecodeRuneInString(pat)
	return c, w, true
}

// DefaultConfig returns the defaults that a config file is decoded over.
func DefaultConfig() Config {
	return Config{
		Server: Server{
			Listen:            "127.0.0.1:8080",
			MaxBody:           1 << 20,
			MaxHeaderBytes:    64 << 10,
			ReadHeaderTimeout: Duration(5 * time.Second),
			ReadTimeout:       Duration(30 * time.Second),
			WriteTimeout:      Duration(30 * time.Second),
			IdleTimeout:       Duration(120 * time.Second),
			ShutdownTimeout:   Duration(10 * time.Second),
		},
		Store: Store{
			Path:        "hookbox.db",
			Synchronous: "full",
			MaxQueued:   DefaultMaxQueued,
		},
		Delivery: Delivery{
			Workers:     4,
			MaxAttempts: 5,
			Backoff:     Duration(2 * time.Second),
			MaxBackoff:  Duration(10 * time.Minute),
			Lease:       Duration(5 * time.Minute),
			Grace:       Duration(10 * time.Second),
			Poll:        Duration(time.Second),
		},
		Alert: Alert{
			Timeout: Duration(10 * time.Second),
		},
		Retention: Retention{
			Payloads: Duration(30 * 24 * time.Hour),
			Dedupe:   Duration(90 * 24 * time.Hour),
			Interval: Duration(time.Hour),
		},
		Health: DefaultHealth(),
	}
}

// LocalSink is the no-config default: listen on 127.0.0.1:8080, store in
// ./hookbox.db, no sources and no targets. serve runs it as the local sink
// (any /hooks/{name} accepted unsigned, event_id "auto"); a config file
// without [[source]] is not that: it answers 404 to every webhook.
func LocalSink() Config {
	return DefaultConfig()
}

// Load reads the file at path and returns Parse's result for it. getenv
// resolves secret_env (os.Getenv when nil). A read error is returned wrapped;
// problems in the file come back as Parse describes.
func Load(path string, getenv func(string) string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data, getenv)
}

// LoadWithoutSecrets is Load for a command that reads the store and needs
// no secret: secret_env is not read and no secret is checked, so it works
// without the service's environment. Secrets stays empty.
func LoadWithoutSecrets(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	return parse(path, data, nil)
}

// Parse decodes data over DefaultConfig, resolves secrets through getenv
// (os.Getenv when nil), fills preset defaults and validates the result. name
// is used in messages. On failure it returns an errors.Join of
// *ValidationError, one for each problem found, ordered by line; the
// returned Config is then not usable.
func Parse(name string, data []byte, getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	return parse(name, data, getenv)
}

// parse is Parse; a nil getenv leaves secrets unresolved and unchecked.
func parse(name string, data []byte, getenv func(string) string) (Config, error) {
	p := newProblems(name)
	cfg := DefaultConfig()
	decode(p, data, &cfg)
	if !p.fatal {
		validate(p, &cfg, getenv)
	}
	if err := p.err(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// ValidationError names one bad key.
type ValidationError struct {
	File  string // the name given to Parse or Load
	Field string // e.g. "source[2].secret_env", "delivery.backoff", "target[billing].source"; "" for syntax errors
	Value string // the offending value, "" for missing; never a secret value
	Line  int    // 1-based line where known, else 0
	Msg   string

	quoted bool // Value was a TOML string: always shown quoted
}

// Error formats e as `config.toml:12: source[0].verify = "stirpe": unknown scheme …`.
func (e *ValidationError) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		fmt.Fprintf(&b, "%s: ", e.File)
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		if e.Value != "" {
			b.WriteString(" = ")
			if e.quoted {
				b.WriteString(strconv.Quote(e.Value))
			} else {
				b.WriteString(literal(e.Value))
			}
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// literal writes numbers and booleans bare and everything else quoted, as
// they would appear in the file.
func literal(v string) string {
	if v == "true" || v == "false" {
		return v
	}
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		return v
	}
	return strconv.Quote(v)
}
