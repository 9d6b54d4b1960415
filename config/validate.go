package config

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"hookbox/location"
	"hookbox/provider"
)

var (
	nameRe    = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	envNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// validName reports whether n may name a source or target. "." and ".."
// are refused: they would not survive as a path segment of /hooks/{name}.
func validName(n string) bool {
	return nameRe.MatchString(n) && n != "." && n != ".."
}

func validate(p *problems, cfg *Config, getenv func(string) string) {
	validateServer(scope{p, "server", "server"}, &cfg.Server)
	validateStore(scope{p, "store", "store"}, &cfg.Store, getenv)
	validateDelivery(scope{p, "delivery", "delivery"}, &cfg.Delivery)
	validateAlert(scope{p, "alert", "alert"}, &cfg.Alert)
	validateRetention(scope{p, "retention", "retention"}, &cfg.Retention)
	validateHealth(scope{p, "health", "health"}, &cfg.Health)
	validateBudgets(scope{p, "store", "store"}, &cfg.Store)
	validateAdmin(scope{p, "admin", "admin"}, &cfg.Admin, cfg.Server.Listen, getenv)

	names := make([]string, len(cfg.Sources))
	for i, s := range cfg.Sources {
		names[i] = s.Name
	}
	scopes := elementScopes(p, "source", names)
	seen := make(map[string]string)
	for i := range cfg.Sources {
		sc := scopes[i]
		checkName(sc, cfg.Sources[i].Name, seen)
		validateSource(sc, &cfg.Sources[i], getenv)
		validateSilence(sc, &cfg.Sources[i])
	}
	if _, _, err := net.SplitHostPort(cfg.Server.Listen); err == nil && len(cfg.Sources) == 0 && !p.failed["source"] && !IsLoopback(cfg.Server.Listen) {
		p.add("server.listen", "server.listen", cfg.Server.Listen,
			"a config without [[source]] answers 404 to every webhook, so beyond loopback it would only expose a port; add a [[source]] or listen on 127.0.0.1")
	}

	names = make([]string, len(cfg.Targets))
	for i, t := range cfg.Targets {
		names[i] = t.Name
	}
	scopes = elementScopes(p, "target", names)
	seen = make(map[string]string)
	for i := range cfg.Targets {
		sc := scopes[i]
		t := &cfg.Targets[i]
		checkName(sc, t.Name, seen)
		validateTarget(sc, t, cfg.Sources, getenv)
		if t.Timeout >= cfg.Delivery.Lease && cfg.Delivery.Lease > 0 {
			// Point at the lease if the file sets it, else at the timeout.
			key := "delivery.lease"
			if _, ok := p.lines[key]; !ok {
				key = sc.key + ".timeout"
			}
			p.add(key, "delivery.lease", cfg.Delivery.Lease.String(), fmt.Sprintf(
				"must be greater than %s.timeout (%s): a delivery running longer than the lease is presumed crashed and run again",
				sc.label, t.Timeout))
		}
	}
}

func checkName(sc scope, name string, seen map[string]string) {
	switch {
	case name == "":
		sc.add("name", "", "required")
	case !validName(name):
		sc.add("name", name, "want 1 to 64 of A-Z a-z 0-9 . _ - (and not \".\" or \"..\")")
	case seen[name] != "":
		sc.addf("name", name, "duplicate name (also %s)", seen[name])
	default:
		seen[name] = sc.key
	}
}

// present reports whether field is set, counting a value that was set but
// failed to decode: its problem is already reported, and "required" would
// only mislead.
func (s scope) present(field string, set bool) bool {
	return set || s.failed(field)
}

// failed reports whether field was set but did not decode (its problem is
// reported; it holds the default).
func (s scope) failed(field string) bool { return s.p.failed[s.key+"."+field] }

// positive checks that d is greater than 0 and reports whether it is.
func positive(sc scope, field string, d Duration) bool {
	if d <= 0 {
		sc.add(field, d.String(), "must be greater than 0")
		return false
	}
	return true
}

func validateServer(sc scope, s *Server) {
	if _, port, err := net.SplitHostPort(s.Listen); err != nil {
		sc.add("listen", s.Listen, `want host:port, e.g. "127.0.0.1:8080" or ":8080"`)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		sc.add("listen", s.Listen, "port must be a number from 0 to 65535")
	}
	if s.MaxBody <= 0 {
		sc.add("max_body", s.MaxBody.String(), "must be greater than 0")
	}
	if s.MaxHeaderBytes <= 0 {
		sc.add("max_header_bytes", s.MaxHeaderBytes.String(), "must be greater than 0")
	}
	positive(sc, "read_header_timeout", s.ReadHeaderTimeout)
	positive(sc, "read_timeout", s.ReadTimeout)
	positive(sc, "write_timeout", s.WriteTimeout)
	positive(sc, "idle_timeout", s.IdleTimeout)
	positive(sc, "shutdown_timeout", s.ShutdownTimeout)
}

// IsLoopback reports whether listen (host:port) names a loopback address.
func IsLoopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func validateStore(sc scope, s *Store, getenv func(string) string) {
	// The URL is never a message's value: it may hold a password.
	_, pathSet := sc.p.lines[sc.key+".path"]
	switch {
	case s.URL != "" && s.URLEnv != "":
		sc.add("url_env", s.URLEnv, "set exactly one of path, url, url_env")
	case s.PostgreSQL() && pathSet:
		field, value := "url", ""
		if s.URLEnv != "" {
			field, value = "url_env", s.URLEnv
		}
		sc.add(field, value, "set exactly one of path, url, url_env (path is SQLite's, url and url_env PostgreSQL's)")
	case s.URL != "" && !postgresURL(s.URL):
		sc.add("url", "", "want a postgres:// or postgresql:// URL")
	case s.URLEnv != "" && !envNameRe.MatchString(s.URLEnv):
		sc.add("url_env", s.URLEnv, "not a valid environment variable name (letters, digits and _, not starting with a digit)")
	case s.URLEnv != "" && getenv != nil:
		if _, err := s.DatabaseURL(getenv); err != nil {
			sc.add("url_env", s.URLEnv, strings.TrimPrefix(err.Error(), "store.url_env: "))
		}
	case !s.PostgreSQL() && s.Path == "":
		sc.add("path", "", "required")
	}
	if s.PostgreSQL() {
		s.Path = "" // SQLite's default does not apply
		if _, set := sc.p.lines[sc.key+".synchronous"]; set {
			sc.add("synchronous", s.Synchronous, "SQLite's; a PostgreSQL store's durability is the server's synchronous_commit (README, Several machines)")
		}
	}
	s.Synchronous = strings.ToLower(s.Synchronous)
	switch s.Synchronous {
	case "full", "normal", "off":
	default:
		sc.add("synchronous", s.Synchronous, `want one of "full", "normal", "off"`)
	}
}

func validateDelivery(sc scope, d *Delivery) {
	if d.Workers < 1 || d.Workers > 256 {
		sc.add("workers", strconv.Itoa(d.Workers), "want 1 to 256")
	}
	if d.MaxAttempts < 1 {
		sc.add("max_attempts", strconv.Itoa(d.MaxAttempts), "must be at least 1")
	}
	positive(sc, "backoff", d.Backoff)
	// Against a backoff that did not decode, the comparison would be with
	// the default, which the file never said.
	if d.MaxBackoff < d.Backoff && !sc.failed("backoff") {
		sc.addf("max_backoff", d.MaxBackoff.String(), "must be at least delivery.backoff (%s)", d.Backoff)
	}
	positive(sc, "lease", d.Lease)
	positive(sc, "poll", d.Poll)
}

func validateAlert(sc scope, a *Alert) {
	if sc.present("url", a.URL != "") && sc.present("command", a.Command != nil) {
		sc.add("command", "", "set url or command, not both")
	}
	if a.URL != "" {
		checkURL(sc, "url", a.URL)
	}
	if a.Command != nil {
		checkCommand(sc, a.Command)
	}
	positive(sc, "timeout", a.Timeout)
}

func validateRetention(sc scope, r *Retention) {
	positive(sc, "payloads", r.Payloads)
	if r.Dedupe < r.Payloads {
		sc.addf("dedupe", r.Dedupe.String(),
			"must be at least retention.payloads (%s): a redelivery must still be recognised while its payload is kept", r.Payloads)
	}
	if positive(sc, "interval", r.Interval) && r.Interval < Duration(time.Second) {
		sc.add("interval", r.Interval.String(), "must be at least 1s: each sweep is a write, and a shorter interval keeps a CPU busy sweeping")
	}
}

func checkURL(sc scope, field, raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		sc.add(field, "", "not a valid URL")
		return
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		shown := raw
		if u.User != nil {
			shown = u.Redacted() // a password is not echoed
		}
		sc.add(field, shown, "want an absolute http:// or https:// URL")
	}
}

// checkPublicURL checks a source's public_url: an absolute http(s) URL
// without a query or fragment, since the query a provider signs is the
// request's own, as received.
func checkPublicURL(sc scope, raw string) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		sc.add("public_url", "", "not a valid URL")
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		sc.add("public_url", redactURL(raw), "want the absolute http:// or https:// URL the provider calls")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#"):
		sc.add("public_url", redactURL(raw), "want the URL without its query: the query signed is the request's own, as received")
	}
}

// redactURL is raw with any password replaced, for a message.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return u.Redacted()
	}
	return raw
}

func checkCommand(sc scope, argv []string) {
	switch {
	case len(argv) == 0:
		sc.add("command", "", "must not be empty (want an argv array, e.g. [\"/usr/local/bin/notify\"])")
	case argv[0] == "":
		sc.add("command", "", "the program (first element) must not be empty")
	}
}

func validateSource(sc scope, s *Source, getenv func(string) string) {
	scheme := s.Verify
	p, known := provider.Lookup(scheme)
	switch {
	case scheme == "":
		sc.add("verify", "", "required (want one of "+strings.Join(provider.Names(), ", ")+")")
	case !known:
		sc.add("verify", scheme, "unknown scheme (want one of "+strings.Join(provider.Names(), ", ")+")")
	}

	// Secrets: never put a secret value in a message, only where it came
	// from. A nil getenv (LoadWithoutSecrets) leaves them unresolved.
	s.Secrets = nil
	for i, v := range s.Secret {
		if v == "" {
			sc.addf("secret", "", "value %d is empty", i+1)
			continue
		}
		if getenv == nil {
			continue
		}
		if err := p.CheckSecret(v); err != nil {
			sc.addf("secret", "", "value %d: %v", i+1, err)
			continue
		}
		s.Secrets = append(s.Secrets, v)
	}
	for _, name := range s.SecretEnv {
		if !envNameRe.MatchString(name) {
			sc.add("secret_env", name, "not a valid environment variable name (letters, digits and _, not starting with a digit)")
			continue
		}
		if getenv == nil {
			continue
		}
		v := getenv(name)
		if v == "" {
			sc.addf("secret_env", name, "environment variable %s is unset or empty", name)
			continue
		}
		if err := p.CheckSecret(v); err != nil {
			sc.addf("secret_env", name, "environment variable %s: %v", name, err)
			continue
		}
		s.Secrets = append(s.Secrets, v)
	}

	if s.MaxBody < 0 {
		sc.add("max_body", s.MaxBody.String(), "must not be negative")
	}
	if !known {
		return
	}

	hasSecret := sc.present("secret", len(s.Secret) > 0) || sc.present("secret_env", len(s.SecretEnv) > 0)
	if p.Unsigned {
		if !s.Insecure {
			sc.addf("insecure", "", `must be true for verify = %q: requests are accepted unsigned`, scheme)
		}
		if hasSecret {
			sc.addf("secret", "", `verify = %q takes no secret`, scheme)
		}
	} else {
		if !hasSecret {
			sc.addf("secret", "", "required for verify = %q (set secret or secret_env)", scheme)
		}
		if s.Insecure {
			sc.add("insecure", "true", onlyFor(func(p provider.Provider) bool { return p.Unsigned }))
		}
	}

	if p.Header != "" {
		if s.Header == "" {
			sc.addf("header", "", "required for verify = %q (the header carrying the %s)", scheme, p.Header)
		} else if !location.ValidHeaderName(s.Header) {
			sc.add("header", s.Header, "not a valid header name")
		}
	} else if s.Header != "" {
		sc.addf("header", s.Header, "%s (%q fixes its header)", onlyFor(func(p provider.Provider) bool { return p.Header != "" }), scheme)
	}

	// The scheme's other keys: a value is lower-cased and checked against
	// the choices where the scheme has them, its first the default.
	for _, kv := range []struct {
		key string
		val *string
	}{{"algorithm", &s.Algorithm}, {"encoding", &s.Encoding}, {"prefix", &s.Prefix}} {
		set, ok := p.Setting(kv.key)
		switch {
		case !ok:
			if *kv.val != "" {
				sc.add(kv.key, *kv.val, onlyFor(func(p provider.Provider) bool {
					_, ok := p.Setting(kv.key)
					return ok
				}))
			}
		case set.Choices != nil:
			*kv.val = strings.ToLower(*kv.val)
			if *kv.val == "" {
				*kv.val = set.Choices[0]
			}
			if !slices.Contains(set.Choices, *kv.val) {
				sc.add(kv.key, *kv.val, "want "+oneOf(set.Choices))
			}
		}
	}

	if s.PublicURL != "" {
		switch {
		case !p.SignsURL:
			sc.addf("public_url", redactURL(s.PublicURL), "%s (%q signs no URL)", onlyFor(func(p provider.Provider) bool { return p.SignsURL }), scheme)
		default:
			checkPublicURL(sc, s.PublicURL)
		}
	}

	if s.Tolerance != 0 && p.Tolerance == 0 {
		timed := schemesWhere(func(p provider.Provider) bool { return p.Tolerance > 0 })
		sc.addf("tolerance", s.Tolerance.String(), "%q signs no timestamp (tolerance applies to %s)", scheme, strings.Join(timed, ", "))
	} else if s.Tolerance > 0 && s.Tolerance < Duration(time.Second) {
		sc.add("tolerance", s.Tolerance.String(), "must be at least 1s: signed timestamps count whole seconds, so a shorter tolerance refuses nearly every request")
	}

	if s.EventID == "" {
		s.EventID = p.EventID
	}
	if s.EventType == "" {
		s.EventType = p.EventType
	}
	if s.EventID == "" {
		sc.addf("event_id", "", `required for verify = %q (e.g. "json:id" or "header:X-Event-Id")`, scheme)
	} else if loc, err := location.Parse(s.EventID, location.ID); err != nil {
		sc.add("event_id", s.EventID, err.Error())
	} else {
		s.EventID = loc.Spec()
	}
	if s.EventType != "" {
		if loc, err := location.Parse(s.EventType, location.Type); err != nil {
			sc.add("event_type", s.EventType, err.Error())
		} else {
			s.EventType = loc.Spec()
		}
	}
	validateOrderKeys(sc, s, p)
}

// schemesWhere returns the names of the providers for which keep is true.
func schemesWhere(keep func(provider.Provider) bool) []string {
	var names []string
	for _, p := range provider.All() {
		if keep(p) {
			names = append(names, p.Name)
		}
	}
	return names
}

// onlyFor says which schemes take a key: the providers for which keep is true.
func onlyFor(keep func(provider.Provider) bool) string {
	return "only for verify = " + strings.Join(quoted(schemesWhere(keep)), " or ")
}

func quoted(values []string) []string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = strconv.Quote(v)
	}
	return q
}

// oneOf says which of choices a value may be: "a" or "b"; one of "a", "b", "c".
func oneOf(choices []string) string {
	if len(choices) == 2 {
		return strings.Join(quoted(choices), " or ")
	}
	return "one of " + strings.Join(quoted(choices), ", ")
}

// ProviderOptions is what the source says of its provider, for
// receiver.NewSource: the scheme, the resolved secrets, the scheme's own
// keys and the event locations.
func (s Source) ProviderOptions() provider.Options {
	return provider.Options{
		Scheme:       s.Verify,
		Secrets:      s.Secrets,
		Tolerance:    s.Tolerance.D(),
		Header:       s.Header,
		Algorithm:    s.Algorithm,
		Encoding:     s.Encoding,
		Prefix:       s.Prefix,
		EventID:      s.EventID,
		EventType:    s.EventType,
		PublicURL:    s.PublicURL,
		OrderKey:     s.OrderKey,
		OrderVersion: s.OrderVersion,
	}
}

// signingSecrets resolves a target's sign_secret_env: each a Standard
// Webhooks secret (whsec_ and base64), as the standard scheme takes them.
func signingSecrets(sc scope, t *Target, getenv func(string) string) {
	t.SignSecrets = nil
	standard, _ := provider.Lookup("standard")
	for i, name := range t.SignSecretEnv {
		switch {
		case !envNameRe.MatchString(name):
			sc.add("sign_secret_env", name, "not a valid environment variable name (letters, digits and _, not starting with a digit)")
			continue
		case slices.Contains(t.SignSecretEnv[:i], name):
			sc.add("sign_secret_env", name, "listed twice")
			continue
		case getenv == nil:
			continue
		}
		v := getenv(name)
		if v == "" {
			sc.addf("sign_secret_env", name, "environment variable %s is unset or empty", name)
			continue
		}
		if err := standard.CheckSecret(v); err != nil {
			sc.addf("sign_secret_env", name, "environment variable %s: %v (a Standard Webhooks secret: whsec_ and base64)", name, err)
			continue
		}
		t.SignSecrets = append(t.SignSecrets, v)
	}
}

func validateTarget(sc scope, t *Target, sources []Source, getenv func(string) string) {
	known := make(map[string]bool, len(sources))
	for _, s := range sources {
		known[s.Name] = true
	}
	hasSource, hasSources := sc.present("source", t.Source != ""), sc.present("sources", len(t.Sources) > 0)
	switch {
	case hasSource && hasSources:
		sc.add("sources", "", "set source or sources, not both")
	case !hasSource && !hasSources:
		sc.add("source", "", `required (set source = "name" or sources = ["a", "b"])`)
	case t.Source != "":
		if !known[t.Source] {
			sc.add("source", t.Source, "no [[source]] has this name")
		}
	default:
		for i, n := range t.Sources {
			if !known[n] {
				sc.add("sources", n, "no [[source]] has this name")
			} else if slices.Contains(t.Sources[:i], n) {
				sc.add("sources", n, "listed twice")
			}
		}
	}

	hasURL, hasCommand := sc.present("url", t.URL != ""), sc.present("command", t.Command != nil)
	switch {
	case hasURL && hasCommand:
		sc.add("command", "", "set url or command, not both")
	case !hasURL && !hasCommand:
		sc.add("url", "", `required: set url or command`)
	case hasURL:
		checkURL(sc, "url", t.URL)
		if t.Env != nil {
			sc.add("env", "", "only for command targets")
		}
	default:
		checkCommand(sc, t.Command)
		if sc.present("permanent_status", t.PermanentStatus != nil) {
			sc.add("permanent_status", "", "only for url targets (a command exits 65, EX_DATAERR, to fail permanently)")
		}
		if sc.present("sign_secret_env", t.SignSecretEnv != nil) {
			sc.add("sign_secret_env", "", "only for url targets (a command's input needs no signature: it runs on this machine)")
		}
	}
	signingSecrets(sc, t, getenv)
	validateRefetch(sc, t, sources, getenv)
	for i, code := range t.PermanentStatus {
		switch {
		case code < 100 || code > 599:
			sc.add("permanent_status", strconv.Itoa(code), "want an HTTP status from 100 to 599")
		case code >= 200 && code < 300:
			sc.add("permanent_status", strconv.Itoa(code), "a 2xx answer is a success, never a failure")
		case slices.Contains(t.PermanentStatus[:i], code):
			sc.add("permanent_status", strconv.Itoa(code), "listed twice")
		}
	}
	for _, name := range sortedKeys(t.Env) {
		if !envNameRe.MatchString(name) {
			sc.add("env", name, "not a valid environment variable name (want [A-Za-z_][A-Za-z0-9_]*)")
		}
	}

	if t.Timeout == 0 {
		t.Timeout = Duration(10 * time.Second)
		if t.Command != nil {
			t.Timeout = Duration(30 * time.Second)
		}
	}
	for _, pat := range t.Events {
		if pat == "" {
			sc.add("events", "", "empty pattern")
		} else if _, err := path.Match(pat, ""); err != nil || strings.ContainsFunc(pat, unicode.IsControl) {
			sc.add("events", pat, "not a valid glob pattern")
		}
	}
	if t.MaxAttempts < 0 {
		sc.add("max_attempts", strconv.Itoa(t.MaxAttempts), "must not be negative (0 = delivery.max_attempts)")
	}
	if t.Concurrency < 0 {
		sc.add("concurrency", strconv.Itoa(t.Concurrency), "must not be negative (0 = no limit)")
	}
	validateOrder(sc, t, sources)
}
