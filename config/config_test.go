package config_test

import (
	"encoding/base64"
	"errors"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"hookbox/config"
)

// env returns a getenv backed by m.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// problems unwraps the errors.Join that Parse returns.
func problems(t testing.TB, err error) []*config.ValidationError {
	t.Helper()
	if err == nil {
		return nil
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	out := make([]*config.ValidationError, 0, len(errs))
	for _, e := range errs {
		var ve *config.ValidationError
		if !errors.As(e, &ve) {
			t.Fatalf("error %T %q is not a *config.ValidationError", e, e)
		}
		out = append(out, ve)
	}
	return out
}

func fields(ps []*config.ValidationError) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Field
	}
	return out
}

func TestExample(t *testing.T) {
	data, err := os.ReadFile("../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	// Every variable the example names gets a value; a missing one would
	// fail. The Standard Webhooks source's must be a whsec_ secret.
	getenv := func(k string) string {
		if k == "ORDERS_WEBHOOK_SECRET" {
			return "whsec_" + base64.StdEncoding.EncodeToString([]byte("secret-of-"+k))
		}
		return "secret-of-" + k
	}
	cfg, err := config.Parse("config.example.toml", data, getenv)
	if err != nil {
		t.Fatalf("Parse(config.example.toml): %v", err)
	}
	if got, want := cfg.Server.Listen, "127.0.0.1:8080"; got != want {
		t.Errorf("server.listen = %q, want %q", got, want)
	}
	if got, want := cfg.Store.Path, "/var/lib/hookbox/hookbox.db"; got != want {
		t.Errorf("store.path = %q, want %q", got, want)
	}
	if got, want := cfg.Retention.Payloads.D(), 30*24*time.Hour; got != want {
		t.Errorf("retention.payloads = %v, want %v", got, want)
	}
	var names []string
	for _, s := range cfg.Sources {
		names = append(names, s.Name+"/"+s.Verify)
	}
	if want := []string{"stripe/stripe", "github/github", "orders/standard", "legacy/hmac"}; !slices.Equal(names, want) {
		t.Errorf("sources = %v, want %v", names, want)
	}
	if got, want := cfg.Sources[0].Secrets, []string{"secret-of-STRIPE_WEBHOOK_SECRET"}; !slices.Equal(got, want) {
		t.Errorf("source[stripe] secrets = %q, want %q", got, want)
	}
	if got, want := len(cfg.Sources[1].Secrets), 2; got != want {
		t.Errorf("source[github] has %d secrets, want %d", got, want)
	}
	if got, want := cfg.Sources[0].EventID, "json:id"; got != want {
		t.Errorf("source[stripe].event_id = %q, want %q", got, want)
	}
	if len(cfg.Targets) != 2 {
		t.Fatalf("got %d targets, want 2", len(cfg.Targets))
	}
	if !cfg.Targets[0].Matches("stripe", "invoice.paid") || cfg.Targets[0].Matches("stripe", "charge.failed") {
		t.Errorf("target[billing] events = %v: want invoice.paid to match and charge.failed not", cfg.Targets[0].Events)
	}
	if got, want := cfg.Targets[1].Command, []string{"/usr/local/bin/welcome", "--quiet"}; !slices.Equal(got, want) {
		t.Errorf("target[welcome-mail].command = %q, want %q", got, want)
	}

	// Without the variables the example names, every one is reported.
	_, err = config.Parse("config.example.toml", data, env(nil))
	var got []string
	for _, p := range problems(t, err) {
		got = append(got, p.Value)
	}
	want := []string{"STRIPE_WEBHOOK_SECRET", "GITHUB_WEBHOOK_SECRET", "GITHUB_WEBHOOK_SECRET_OLD", "ORDERS_WEBHOOK_SECRET", "LEGACY_WEBHOOK_SECRET"}
	if !slices.Equal(got, want) {
		t.Errorf("with no environment: problems name %q, want %q", got, want)
	}
}

func TestLoad(t *testing.T) {
	t.Run("File", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "hookbox.toml")
		if err := os.WriteFile(path, []byte("[server]\nlisten = \"127.0.0.1:9\"\nbogus = 1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := config.Load(path, nil)
		ps := problems(t, err)
		if len(ps) != 1 || ps[0].File != path || ps[0].Line != 3 || ps[0].Field != "server.bogus" {
			t.Fatalf("Load = %v, want one problem at %s:3 naming server.bogus", err, path)
		}
	})
	t.Run("Missing file", func(t *testing.T) {
		_, err := config.Load(filepath.Join(t.TempDir(), "nope.toml"), nil)
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Load(missing) = %v, want an error wrapping os.ErrNotExist", err)
		}
	})
}

func TestParse_Defaults(t *testing.T) {
	cfg, err := config.Parse("empty.toml", nil, env(nil))
	if err != nil {
		t.Fatalf("Parse(empty) = %v, want no error", err)
	}
	if want := config.DefaultConfig(); !reflect.DeepEqual(cfg, want) {
		t.Fatalf("Parse(empty) = %+v, want DefaultConfig() %+v", cfg, want)
	}
	if want := config.LocalSink(); !reflect.DeepEqual(cfg, want) {
		t.Fatalf("Parse(empty) = %+v, want LocalSink() %+v", cfg, want)
	}

	d := config.DefaultConfig()
	checks := []struct {
		name      string
		got, want any
	}{
		{"server.listen", d.Server.Listen, "127.0.0.1:8080"},
		{"server.max_body", d.Server.MaxBody.Int(), int64(1 << 20)},
		{"server.max_header_bytes", d.Server.MaxHeaderBytes.Int(), int64(64 << 10)},
		{"server.read_header_timeout", d.Server.ReadHeaderTimeout.D(), 5 * time.Second},
		{"server.read_timeout", d.Server.ReadTimeout.D(), 30 * time.Second},
		{"server.write_timeout", d.Server.WriteTimeout.D(), 30 * time.Second},
		{"server.idle_timeout", d.Server.IdleTimeout.D(), 120 * time.Second},
		{"server.shutdown_timeout", d.Server.ShutdownTimeout.D(), 10 * time.Second},
		{"store.path", d.Store.Path, "hookbox.db"},
		{"store.synchronous", d.Store.Synchronous, "full"},
		{"delivery.workers", d.Delivery.Workers, 4},
		{"delivery.max_attempts", d.Delivery.MaxAttempts, 5},
		{"delivery.backoff", d.Delivery.Backoff.D(), 2 * time.Second},
		{"delivery.max_backoff", d.Delivery.MaxBackoff.D(), 10 * time.Minute},
		{"delivery.lease", d.Delivery.Lease.D(), 5 * time.Minute},
		{"delivery.poll", d.Delivery.Poll.D(), time.Second},
		{"delivery.grace", d.Delivery.Grace.D(), 10 * time.Second},
		{"alert.timeout", d.Alert.Timeout.D(), 10 * time.Second},
		{"retention.payloads", d.Retention.Payloads.D(), 30 * 24 * time.Hour},
		{"retention.dedupe", d.Retention.Dedupe.D(), 90 * 24 * time.Hour},
		{"retention.interval", d.Retention.Interval.D(), time.Hour},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("default %s = %v, want %v", c.name, c.got, c.want)
		}
	}

	t.Run("Absent keys keep defaults", func(t *testing.T) {
		cfg, err := config.Parse("c.toml", []byte("[delivery]\nworkers = 8\n[store]\nsynchronous = \"NORMAL\"\n"), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Delivery.Workers != 8 || cfg.Delivery.MaxAttempts != 5 || cfg.Delivery.Lease.D() != 5*time.Minute {
			t.Fatalf("delivery = %+v, want workers 8 and the other defaults", cfg.Delivery)
		}
		if got, want := cfg.Store.Synchronous, "normal"; got != want {
			t.Fatalf("store.synchronous = %q, want %q (lowercased)", got, want)
		}
	})

	t.Run("Target timeouts", func(t *testing.T) {
		doc := srcStripe + `
[[target]]
name = "u"
source = "s"
url = "http://127.0.0.1:9000/"
[[target]]
name = "c"
source = "s"
command = ["/bin/true"]
`
		cfg, err := config.Parse("c.toml", []byte(doc), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := cfg.Targets[0].Timeout.D(), 10*time.Second; got != want {
			t.Errorf("url target timeout = %v, want %v", got, want)
		}
		if got, want := cfg.Targets[1].Timeout.D(), 30*time.Second; got != want {
			t.Errorf("command target timeout = %v, want %v", got, want)
		}
	})
}

const srcStripe = `
[[source]]
name = "s"
verify = "stripe"
secret = "whsec_x"
`

func TestParse_Presets(t *testing.T) {
	tests := []struct {
		verify, extra   string
		wantID, wantTyp string
	}{
		{"stripe", "", "json:id", "json:type"},
		{"github", "", "header:X-GitHub-Delivery", "header:X-GitHub-Event"},
		{"shopify", "", "header:X-Shopify-Webhook-Id,header:Shopify-Event-Id", "header:X-Shopify-Topic,header:Shopify-Topic"},
		{"slack", "", "json:event_id", "json:event.type"},
		{"standard", "", "header:webhook-id,header:svix-id", "json:type"},
		{"gitlab", "", "header:X-Gitlab-Event-UUID", "header:X-Gitlab-Event"},
		{"twilio", "", "body-sha256", ""},
		{"mercadopago", "", "header:X-Request-Id", "json:action,json:type"},
		{"square", "", "json:event_id", "json:type"},
		{"hubspot", "", "json:0.eventId,body-sha256", "json:0.subscriptionType"},
		{"zoom", "", "body-sha256", "json:event"},
		{"twitch", "", "header:Twitch-Eventsub-Message-Id", "header:Twitch-Eventsub-Subscription-Type"},
		{"stripe", `event_id = "header:Idem , json:id"` + "\n" + `event_type = "auto"`, "header:Idem,json:id", "auto"},
		{"hmac", `header = "X-Sig"` + "\n" + `event_id = "body-sha256"`, "body-sha256", ""},
		{"token", `header = "X-Token"` + "\n" + `event_id = "json:data.id"` + "\n" + `event_type = "json:data.kind"`, "json:data.id", "json:data.kind"},
		{"none", `insecure = true` + "\n" + `event_id = "auto"`, "auto", ""},
	}
	for _, tt := range tests {
		t.Run(tt.verify, func(t *testing.T) {
			doc := "[[source]]\nname = \"s\"\nverify = \"" + tt.verify + "\"\n" + tt.extra + "\n"
			if tt.verify != "none" {
				doc += "secret = \"whsec_aw==\"\n"
			}
			cfg, err := config.Parse("c.toml", []byte(doc), env(nil))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			s := cfg.Sources[0]
			if s.EventID != tt.wantID || s.EventType != tt.wantTyp {
				t.Fatalf("event_id, event_type = %q, %q; want %q, %q", s.EventID, s.EventType, tt.wantID, tt.wantTyp)
			}
		})
	}

	t.Run("hmac defaults", func(t *testing.T) {
		doc := "[[source]]\nname = \"h\"\nverify = \"hmac\"\nsecret = \"k\"\nheader = \"X-Sig\"\nevent_id = \"json:id\"\n"
		cfg, err := config.Parse("c.toml", []byte(doc), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		if s := cfg.Sources[0]; s.Algorithm != "sha256" || s.Encoding != "hex" {
			t.Fatalf("algorithm, encoding = %q, %q; want \"sha256\", \"hex\"", s.Algorithm, s.Encoding)
		}
	})
}

// A PostgreSQL store is named by url or url_env instead of path; the URL
// is never echoed by an error.
func TestParse_StoreURL(t *testing.T) {
	cfg, err := config.Parse("c.toml", []byte("[store]\nurl_env = \"DB_URL\"\n"), env(map[string]string{"DB_URL": "postgres://u:pw@db/x"}))
	if err != nil {
		t.Fatal(err)
	}
	u, err := cfg.Store.DatabaseURL(env(map[string]string{"DB_URL": "postgres://u:pw@db/x"}))
	if !cfg.Store.PostgreSQL() || cfg.Store.Path != "" || u != "postgres://u:pw@db/x" || err != nil {
		t.Fatalf("store %+v, URL %q, %v; want PostgreSQL at the variable's URL, no path", cfg.Store, u, err)
	}
	_, err = config.Parse("c.toml", []byte("[store]\npath = \"x.db\"\nurl = \"postgres://u:s3cr3t@db/x\"\n"), env(nil))
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("path and url: %v; want an error without the password", err)
	}
	_, err = config.Parse("c.toml", []byte("[store]\nurl_env = \"DB_URL\"\n"), env(map[string]string{"DB_URL": "mysql://u:s3cr3t@db/x"}))
	if err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "DB_URL") {
		t.Fatalf("url_env holding no postgres URL: %v; want an error naming the variable, without its value", err)
	}
}

func TestParse_Validation(t *testing.T) {
	const tgt = "\n[[target]]\nname = \"t\"\nsource = \"s\"\n"
	tests := []struct {
		name      string
		doc       string
		wantField string
		wantValue string
	}{
		// [server]
		{"Listen without port", "[server]\nlisten = \"0.0.0.0\"\n" + srcStripe, "server.listen", "0.0.0.0"},
		{"Listen bad port", "[server]\nlisten = \":99999\"\n" + srcStripe, "server.listen", ":99999"},
		{"Listen beyond loopback without sources", "[server]\nlisten = \"0.0.0.0:8080\"\n", "server.listen", "0.0.0.0:8080"},
		{"Max body zero", "[server]\nmax_body = 0\n", "server.max_body", "0B"},
		{"Max body decimal unit", "[server]\nmax_body = \"1MB\"\n", "server.max_body", "1MB"},
		{"Max header bytes zero", "[server]\nmax_header_bytes = \"0KiB\"\n", "server.max_header_bytes", "0B"},
		{"Read timeout zero", "[server]\nread_timeout = \"0s\"\n", "server.read_timeout", "0s"},
		{"Idle timeout negative", "[server]\nidle_timeout = \"-1s\"\n", "server.idle_timeout", "-1s"},
		{"Shutdown timeout not a duration", "[server]\nshutdown_timeout = \"soon\"\n", "server.shutdown_timeout", "soon"},
		{"Write timeout integer", "[server]\nwrite_timeout = 30\n", "server.write_timeout", "30"},
		{"Server not a table", "server = 5\n", "server", ""},

		// [store]
		{"Store path empty", "[store]\npath = \"\"\n", "store.path", ""},
		{"Synchronous", "[store]\nsynchronous = \"extra\"\n", "store.synchronous", "extra"},
		{"Store path and url", "[store]\npath = \"x.db\"\nurl = \"postgres://u:pw@db/x\"\n", "store.url", ""},
		{"Store path and url_env", "[store]\npath = \"x.db\"\nurl_env = \"DB_URL\"\n", "store.url_env", "DB_URL"},
		{"Store url and url_env", "[store]\nurl = \"postgres://u:pw@db/x\"\nurl_env = \"DB_URL\"\n", "store.url_env", "DB_URL"},
		{"Store url not postgres", "[store]\nurl = \"mysql://u:pw@db/x\"\n", "store.url", ""},
		{"Store url with synchronous", "[store]\nurl = \"postgres://db/x\"\nsynchronous = \"normal\"\n", "store.synchronous", "normal"},
		{"Store url_env bad name", "[store]\nurl_env = \"1DB\"\n", "store.url_env", "1DB"},
		{"Store url_env unset", "[store]\nurl_env = \"HOOKBOX_TEST_UNSET_URL\"\n", "store.url_env", "HOOKBOX_TEST_UNSET_URL"},
		{"Max queued zero", "[store]\nmax_queued = 0\n", "store.max_queued", "0"},
		{"Min free disk not a size", "[store]\nmin_free_disk = \"lots\"\n", "store.min_free_disk", "lots"},
		{"Min free disk on PostgreSQL", "[store]\nurl = \"postgres://db/x\"\nmin_free_disk = \"1GiB\"\n", "store.min_free_disk", "1GiB"},

		// [admin]
		{"Admin listen without port", "[admin]\nlisten = \"127.0.0.1\"\n", "admin.listen", "127.0.0.1"},
		{"Admin beyond loopback without a token", "[admin]\nlisten = \"0.0.0.0:8081\"\n", "admin.token_env", ""},
		{"Admin token_env bad name", "[admin]\nlisten = \"127.0.0.1:8081\"\ntoken_env = \"A-B\"\n", "admin.token_env", "A-B"},
		{"Admin token_env empty", "[admin]\nlisten = \"0.0.0.0:8081\"\ntoken_env = \"EMPTY_VAR\"\n", "admin.token_env", "EMPTY_VAR"},
		{"Admin on the webhook listener", "[server]\nlisten = \"127.0.0.1:9000\"\n[admin]\nlisten = \"127.0.0.1:9000\"\n", "admin.listen", "127.0.0.1:9000"},
		{"Admin unknown key", "[admin]\ntoken = \"x\"\n", "admin.token", ""},

		// [delivery]
		{"Workers zero", "[delivery]\nworkers = 0\n", "delivery.workers", "0"},
		{"Workers too many", "[delivery]\nworkers = 257\n", "delivery.workers", "257"},
		{"Workers not a number", "[delivery]\nworkers = \"four\"\n", "delivery.workers", "four"},
		{"Max attempts zero", "[delivery]\nmax_attempts = 0\n", "delivery.max_attempts", "0"},
		{"Backoff zero", "[delivery]\nbackoff = \"0s\"\nmax_backoff = \"0s\"\n", "delivery.backoff", "0s"},
		{"Max backoff below backoff", "[delivery]\nbackoff = \"1m\"\nmax_backoff = \"30s\"\n", "delivery.max_backoff", "30s"},
		{"Backoff unreadable, max backoff below the default", "[delivery]\nbackoff = \"2x\"\nmax_backoff = \"1s\"\n", "delivery.backoff", "2x"},
		{"Lease zero", "[delivery]\nlease = \"0s\"\n", "delivery.lease", "0s"},
		{"Poll zero", "[delivery]\npoll = \"0s\"\n", "delivery.poll", "0s"},
		{"Lease not above target timeout", srcStripe + tgt + "url = \"http://127.0.0.1/\"\ntimeout = \"5m\"\n", "delivery.lease", "5m"},

		// [alert]
		{"Alert url and command", "[alert]\nurl = \"http://127.0.0.1/\"\ncommand = \"/bin/notify\"\n", "alert.command", ""},
		{"Alert url relative", "[alert]\nurl = \"/alerts\"\n", "alert.url", "/alerts"},
		{"Alert url scheme", "[alert]\nurl = \"ftp://host/x\"\n", "alert.url", "ftp://host/x"},
		{"Alert command empty program", "[alert]\ncommand = [\"\", \"-x\"]\n", "alert.command", ""},
		{"Alert command empty", "[alert]\ncommand = []\n", "alert.command", ""},
		{"Alert timeout zero", "[alert]\ntimeout = \"0s\"\n", "alert.timeout", "0s"},

		// [retention]
		{"Payloads zero", "[retention]\npayloads = \"0d\"\ndedupe = \"0d\"\n", "retention.payloads", "0s"},
		{"Dedupe below payloads", "[retention]\npayloads = \"30d\"\ndedupe = \"7d\"\n", "retention.dedupe", "7d"},
		{"Interval zero", "[retention]\ninterval = \"0s\"\n", "retention.interval", "0s"},
		{"Interval below a second", "[retention]\ninterval = \"1ns\"\n", "retention.interval", "1ns"},

		// [[source]]
		{"Source name missing", "[[source]]\nverify = \"stripe\"\nsecret = \"k\"\n", "source[0].name", ""},
		{"Source name bad", "[[source]]\nname = \"a b\"\nverify = \"stripe\"\nsecret = \"k\"\n", "source[0].name", "a b"},
		{"Source name dot dot", "[[source]]\nname = \"..\"\nverify = \"stripe\"\nsecret = \"k\"\n", "source[0].name", ".."},
		{"Source name too long", "[[source]]\nname = \"" + strings.Repeat("a", 65) + "\"\nverify = \"stripe\"\nsecret = \"k\"\n", "source[0].name", strings.Repeat("a", 65)},
		{"Source name duplicate", srcStripe + srcStripe, "source[1].name", "s"},
		{"Verify missing", "[[source]]\nname = \"s\"\nsecret = \"k\"\n", "source[s].verify", ""},
		{"Verify unknown", "[[source]]\nname = \"s\"\nverify = \"stirpe\"\nsecret = \"k\"\n", "source[s].verify", "stirpe"},
		{"Secret missing", "[[source]]\nname = \"s\"\nverify = \"github\"\n", "source[s].secret", ""},
		{"Secret empty value", "[[source]]\nname = \"s\"\nverify = \"github\"\nsecret = [\"k\", \"\"]\n", "source[s].secret", ""},
		{"Secret wrong type", "[[source]]\nname = \"s\"\nverify = \"github\"\nsecret = 42\n", "source[s].secret", ""},
		{"Secret env unset", "[[source]]\nname = \"s\"\nverify = \"github\"\nsecret_env = \"UNSET_VAR\"\n", "source[s].secret_env", "UNSET_VAR"},
		{"Secret env empty", "[[source]]\nname = \"s\"\nverify = \"github\"\nsecret_env = \"EMPTY_VAR\"\n", "source[s].secret_env", "EMPTY_VAR"},
		{"Secret env bad name", "[[source]]\nname = \"s\"\nverify = \"github\"\nsecret_env = \"1BAD\"\n", "source[s].secret_env", "1BAD"},
		{"None without insecure", "[[source]]\nname = \"s\"\nverify = \"none\"\nevent_id = \"auto\"\n", "source[s].insecure", ""},
		{"None with secret", "[[source]]\nname = \"s\"\nverify = \"none\"\ninsecure = true\nevent_id = \"auto\"\nsecret = \"k\"\n", "source[s].secret", ""},
		{"Insecure on a signed scheme", srcStripe + "insecure = true\n", "source[s].insecure", "true"},
		{"Hmac without header", "[[source]]\nname = \"s\"\nverify = \"hmac\"\nsecret = \"k\"\nevent_id = \"json:id\"\n", "source[s].header", ""},
		{"Token without header", "[[source]]\nname = \"s\"\nverify = \"token\"\nsecret = \"k\"\nevent_id = \"json:id\"\n", "source[s].header", ""},
		{"Hmac without event_id", "[[source]]\nname = \"s\"\nverify = \"hmac\"\nsecret = \"k\"\nheader = \"X-Sig\"\n", "source[s].event_id", ""},
		{"Header bad", "[[source]]\nname = \"s\"\nverify = \"token\"\nsecret = \"k\"\nevent_id = \"json:id\"\nheader = \"X Sig\"\n", "source[s].header", "X Sig"},
		{"Header on a preset", srcStripe + "header = \"X-Sig\"\n", "source[s].header", "X-Sig"},
		{"Algorithm", "[[source]]\nname = \"s\"\nverify = \"hmac\"\nsecret = \"k\"\nheader = \"X-Sig\"\nevent_id = \"json:id\"\nalgorithm = \"md5\"\n", "source[s].algorithm", "md5"},
		{"Encoding", "[[source]]\nname = \"s\"\nverify = \"hmac\"\nsecret = \"k\"\nheader = \"X-Sig\"\nevent_id = \"json:id\"\nencoding = \"base32\"\n", "source[s].encoding", "base32"},
		{"Prefix on a preset", srcStripe + "prefix = \"sha256=\"\n", "source[s].prefix", "sha256="},
		{"Tolerance without timestamp", "[[source]]\nname = \"s\"\nverify = \"github\"\nsecret = \"k\"\ntolerance = \"1m\"\n", "source[s].tolerance", "1m"},
		{"Tolerance below a second", "[[source]]\nname = \"s\"\nverify = \"slack\"\nsecret = \"k\"\ntolerance = \"1ns\"\n", "source[s].tolerance", "1ns"},
		{"Source max body negative", srcStripe + "max_body = -1\n", "source[s].max_body", "-1"},
		{"Event id json empty", srcStripe + "event_id = \"json:\"\n", "source[s].event_id", "json:"},
		{"Event id json empty segment", srcStripe + "event_id = \"json:a..b\"\n", "source[s].event_id", "json:a..b"},
		{"Event id header empty", srcStripe + "event_id = \"header:\"\n", "source[s].event_id", "header:"},
		{"Event id header bad", srcStripe + "event_id = \"header:X Id\"\n", "source[s].event_id", "header:X Id"},
		{"Event id unknown form", srcStripe + "event_id = \"xml:id\"\n", "source[s].event_id", "xml:id"},
		{"Event id empty alternative", srcStripe + "event_id = \"json:id,\"\n", "source[s].event_id", "json:id,"},
		{"Event type body hash", srcStripe + "event_type = \"body-sha256\"\n", "source[s].event_type", "body-sha256"},
		{"Source not an array of tables", "source = \"stripe\"\n", "source", ""},

		// [[target]]
		{"Target name missing", srcStripe + "[[target]]\nsource = \"s\"\nurl = \"http://127.0.0.1/\"\n", "target[0].name", ""},
		{"Target name duplicate", srcStripe + tgt + "url = \"http://127.0.0.1/\"\n" + tgt + "url = \"http://127.0.0.1/\"\n", "target[1].name", "t"},
		{"Target source missing", srcStripe + "[[target]]\nname = \"t\"\nurl = \"http://127.0.0.1/\"\n", "target[t].source", ""},
		{"Target source unknown", srcStripe + "[[target]]\nname = \"t\"\nsource = \"nope\"\nurl = \"http://127.0.0.1/\"\n", "target[t].source", "nope"},
		{"Target sources unknown", srcStripe + "[[target]]\nname = \"t\"\nsources = [\"s\", \"nope\"]\nurl = \"http://127.0.0.1/\"\n", "target[t].sources", "nope"},
		{"Target sources twice", srcStripe + "[[target]]\nname = \"t\"\nsources = [\"s\", \"s\"]\nurl = \"http://127.0.0.1/\"\n", "target[t].sources", "s"},
		{"Target source and sources", srcStripe + tgt + "sources = [\"s\"]\nurl = \"http://127.0.0.1/\"\n", "target[t].sources", ""},
		{"Target url and command", srcStripe + tgt + "url = \"http://127.0.0.1/\"\ncommand = [\"/bin/true\"]\n", "target[t].command", ""},
		{"Target neither url nor command", srcStripe + tgt, "target[t].url", ""},
		{"Target url relative", srcStripe + tgt + "url = \"/stripe\"\n", "target[t].url", "/stripe"},
		{"Target url not a URL", srcStripe + tgt + "url = \"http://[::1\"\n", "target[t].url", ""},
		{"Target command empty program", srcStripe + tgt + "command = [\"\"]\n", "target[t].command", ""},
		{"Target env name", srcStripe + tgt + "command = [\"/bin/true\"]\nenv = { \"1BAD\" = \"x\" }\n", "target[t].env", "1BAD"},
		{"Target env on url", srcStripe + tgt + "url = \"http://127.0.0.1/\"\nenv = { A = \"x\" }\n", "target[t].env", ""},
		{"Target events glob", srcStripe + tgt + "url = \"http://127.0.0.1/\"\nevents = [\"invoice.[\"]\n", "target[t].events", "invoice.["},
		{"Target events control character", srcStripe + tgt + "url = \"http://127.0.0.1/\"\nevents = [\"orders\\u0000*\"]\n", "target[t].events", "orders\x00*"},
		{"Target events empty pattern", srcStripe + tgt + "url = \"http://127.0.0.1/\"\nevents = [\"\"]\n", "target[t].events", ""},
		{"Target max attempts negative", srcStripe + tgt + "url = \"http://127.0.0.1/\"\nmax_attempts = -1\n", "target[t].max_attempts", "-1"},
		{"Target command wrong type", srcStripe + tgt + "command = \"/bin/true\"\n", "target[t].command", "/bin/true"},
		{"Target permanent status below 100", srcStripe + tgt + "url = \"http://127.0.0.1/\"\npermanent_status = [410, 99]\n", "target[t].permanent_status", "99"},
		{"Target permanent status above 599", srcStripe + tgt + "url = \"http://127.0.0.1/\"\npermanent_status = [600]\n", "target[t].permanent_status", "600"},
		{"Target permanent status 2xx", srcStripe + tgt + "url = \"http://127.0.0.1/\"\npermanent_status = [422, 204]\n", "target[t].permanent_status", "204"},
		{"Target permanent status twice", srcStripe + tgt + "url = \"http://127.0.0.1/\"\npermanent_status = [410, 410]\n", "target[t].permanent_status", "410"},
		{"Target permanent status not a list", srcStripe + tgt + "url = \"http://127.0.0.1/\"\npermanent_status = 410\n", "target[t].permanent_status", "410"},
		{"Target permanent status strings", srcStripe + tgt + "url = \"http://127.0.0.1/\"\npermanent_status = [\"410\"]\n", "target[t].permanent_status", ""},
		{"Target permanent status on command", srcStripe + tgt + "command = [\"/bin/true\"]\npermanent_status = [410]\n", "target[t].permanent_status", ""},
		{"Target rate without unit", srcStripe + tgt + "url = \"http://127.0.0.1/\"\nrate = \"50\"\n", "target[t].rate", "50"},
		{"Target rate unit", srcStripe + tgt + "url = \"http://127.0.0.1/\"\nrate = \"50/d\"\n", "target[t].rate", "50/d"},
		{"Target rate zero", srcStripe + tgt + "url = \"http://127.0.0.1/\"\nrate = \"0/s\"\n", "target[t].rate", "0/s"},
		{"Target rate a number", srcStripe + tgt + "url = \"http://127.0.0.1/\"\nrate = 50\n", "target[t].rate", "50"},
		{"Target concurrency negative", srcStripe + tgt + "url = \"http://127.0.0.1/\"\nconcurrency = -1\n", "target[t].concurrency", "-1"},

		// Unknown keys
		{"Unknown section", "[sever]\nlisten = \"x\"\n", "sever", ""},
		{"Unknown key", "[server]\nlisten_addr = \"x\"\n", "server.listen_addr", ""},
		{"Unknown source key", srcStripe + "secrte = \"k\"\n", "source[s].secrte", ""},
		{"Unknown target key", srcStripe + tgt + "url = \"http://127.0.0.1/\"\nheaders = { A = \"b\" }\n", "target[t].headers", ""},
		{"Key case matters", "[server]\nListen = \"127.0.0.1:1\"\n", "server.Listen", ""},
	}
	getenv := env(map[string]string{"EMPTY_VAR": ""})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("c.toml", []byte(tt.doc), getenv)
			ps := problems(t, err)
			if len(ps) != 1 {
				t.Fatalf("got %d problems %q, want exactly one naming %s:\n%v", len(ps), fields(ps), tt.wantField, err)
			}
			if got := ps[0].Field; got != tt.wantField {
				t.Fatalf("field = %q, want %q (%v)", got, tt.wantField, err)
			}
			if got := ps[0].Value; got != tt.wantValue {
				t.Fatalf("value = %q, want %q (%v)", got, tt.wantValue, err)
			}
			if ps[0].Msg == "" || ps[0].Line == 0 {
				t.Fatalf("problem %+v: want a message and a line", ps[0])
			}
			if !strings.HasPrefix(err.Error(), "c.toml:") || !strings.Contains(err.Error(), tt.wantField) {
				t.Fatalf("Error() = %q, want it to start with the file and name %s", err, tt.wantField)
			}
		})
	}
}

func TestParse_InlineTables(t *testing.T) {
	doc := "source = [{name = \"a\", verify = \"github\", secret = \"k\"}, {name = \"b\", verify = \"x\", secret = \"k\"}]\n"
	_, err := config.Parse("c.toml", []byte(doc), env(nil))
	ps := problems(t, err)
	if len(ps) != 1 || ps[0].Field != "source[b].verify" || ps[0].Line != 1 {
		t.Fatalf("got %v, want one problem naming source[b].verify at line 1", err)
	}
}

func TestParse_Lines(t *testing.T) {
	doc := `# comment
[server]
listen = "127.0.0.1:8080"

[[source]]
name = "a"
verify = "stripe"
secret = [
  "k1",   # ] not the end
  "k2",
]
note = """
name = "fake"
[[source]]
"""

[[source]]
name = "b"
"verify" = "stirpe"
secret = 'k'

[[target]]
name = "t"
source = "a"
url = "http://127.0.0.1/"
events = [
  "[",
]
`
	_, err := config.Parse("c.toml", []byte(doc), env(nil))
	ps := problems(t, err)
	type fl struct {
		Field string
		Line  int
	}
	var got []fl
	for _, p := range ps {
		got = append(got, fl{p.Field, p.Line})
	}
	want := []fl{
		{"source[a].note", 12},
		{"source[b].verify", 19},
		{"target[t].events", 26},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("problems at %v, want %v\n%v", got, want, err)
	}
}

func TestParse_SyntaxError(t *testing.T) {
	tests := []struct {
		name     string
		doc      string
		wantLine int
	}{
		{"Missing value", "[server]\nlisten =\n", 2},
		{"Unterminated string", "[server]\n\nlisten = \"127.0.0.1\n", 3},
		{"Duplicate key", "[server]\nlisten = \"a:1\"\nlisten = \"b:1\"\n", 3},
		{"Bad value", "[store]\npath = nope\n", 2},
		{"Unclosed table header", "[server]\n[store\npath = \"x.db\"\n", 2},
		{"Unclosed array of tables", "\n[[source\nname = \"a\"\n", 2},
		{"Unclosed array at end", "[store]\npath = [1,\n", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("c.toml", []byte(tt.doc), env(nil))
			ps := problems(t, err)
			if len(ps) != 1 {
				t.Fatalf("got %d problems, want 1: %v", len(ps), err)
			}
			if ps[0].Line != tt.wantLine {
				t.Fatalf("line = %d, want %d (%v)", ps[0].Line, tt.wantLine, err)
			}
			if want := "c.toml:" + string(rune('0'+tt.wantLine)) + ": "; !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("Error() = %q, want prefix %q", err, want)
			}
		})
	}
}

func TestParse_AllProblemsAtOnce(t *testing.T) {
	doc := `[server]
listen = "nowhere"
bogus = true

[delivery]
workers = "four"
backoff = "0s"

[[source]]
name = "s"
verify = "stirpe"
secret_env = "UNSET"

[[target]]
name = "t"
source = "x"
url = "ftp://example.com/"
`
	_, err := config.Parse("c.toml", []byte(doc), env(nil))
	ps := problems(t, err)
	want := []struct {
		field string
		line  int
	}{
		{"server.listen", 2},
		{"server.bogus", 3},
		{"delivery.workers", 6},
		{"delivery.backoff", 7},
		{"source[s].verify", 11},
		{"source[s].secret_env", 12},
		{"target[t].source", 16},
		{"target[t].url", 17},
	}
	if len(ps) != len(want) {
		t.Fatalf("got %d problems %q, want %d:\n%v", len(ps), fields(ps), len(want), err)
	}
	for i, w := range want {
		if ps[i].Field != w.field || ps[i].Line != w.line {
			t.Errorf("problem %d = %s at line %d, want %s at line %d", i, ps[i].Field, ps[i].Line, w.field, w.line)
		}
	}
}

func TestParse_Secrets(t *testing.T) {
	getenv := env(map[string]string{
		"NEW_SECRET": "topsecret-from-env-new",
		"OLD_SECRET": "topsecret-from-env-old",
	})
	tests := []struct {
		name string
		keys string
		want []string
	}{
		{"Secret", `secret = "topsecret-inline"`, []string{"topsecret-inline"}},
		{"Secret list", `secret = ["topsecret-a", "topsecret-b"]`, []string{"topsecret-a", "topsecret-b"}},
		{"Secret env", `secret_env = "NEW_SECRET"`, []string{"topsecret-from-env-new"}},
		{"Secret env list", `secret_env = ["NEW_SECRET", "OLD_SECRET"]`, []string{"topsecret-from-env-new", "topsecret-from-env-old"}},
		{"Both", "secret_env = [\"NEW_SECRET\"]\nsecret = \"topsecret-inline\"", []string{"topsecret-inline", "topsecret-from-env-new"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "[[source]]\nname = \"s\"\nverify = \"github\"\n" + tt.keys + "\n"
			cfg, err := config.Parse("c.toml", []byte(doc), getenv)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Sources[0].Secrets; !slices.Equal(got, tt.want) {
				t.Fatalf("secrets = %q, want %q", got, tt.want)
			}
		})
	}

	t.Run("Unset variable", func(t *testing.T) {
		doc := "[[source]]\nname = \"s\"\nverify = \"github\"\nsecret_env = [\"NEW_SECRET\", \"GONE_SECRET\"]\n"
		_, err := config.Parse("c.toml", []byte(doc), getenv)
		ps := problems(t, err)
		if len(ps) != 1 || ps[0].Field != "source[s].secret_env" || ps[0].Value != "GONE_SECRET" {
			t.Fatalf("got %v, want one problem naming source[s].secret_env = GONE_SECRET", err)
		}
		if !strings.Contains(err.Error(), "GONE_SECRET") {
			t.Fatalf("Error() = %q, want it to name GONE_SECRET", err)
		}
	})

	// A Standard Webhooks secret that is not whsec_ base64 is reported with
	// the other problems, by key (and variable), not at the first request.
	t.Run("Bad standard secret", func(t *testing.T) {
		doc := "[[source]]\nname = \"s\"\nverify = \"standard\"\nsecret = \"whsec_topsecret!!\"\nsecret_env = \"NEW_SECRET\"\n"
		_, err := config.Parse("c.toml", []byte(doc), getenv)
		ps := problems(t, err)
		if len(ps) != 2 || ps[0].Field != "source[s].secret" || ps[1].Field != "source[s].secret_env" || ps[1].Value != "NEW_SECRET" {
			t.Fatalf("got %v, want problems for source[s].secret and source[s].secret_env = NEW_SECRET", err)
		}
		if strings.Contains(err.Error(), "topsecret") {
			t.Errorf("error %q contains a secret value", err)
		}
	})

	// Commands that only read the store load the config without its
	// environment: nothing is resolved or checked, nothing fails.
	t.Run("Without secrets", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "c.toml")
		doc := "[[source]]\nname = \"s\"\nverify = \"standard\"\nsecret_env = \"HOOKBOX_TEST_UNSET_SECRET\"\n"
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.LoadWithoutSecrets(path)
		if err != nil {
			t.Fatalf("LoadWithoutSecrets: %v", err)
		}
		if len(cfg.Sources) != 1 || len(cfg.Sources[0].Secrets) != 0 {
			t.Fatalf("sources = %+v, want one with no resolved secret", cfg.Sources)
		}
	})

	// No message may carry a secret value, whatever else is wrong.
	leaky := []string{
		"[[source]]\nname = \"s\"\nverify = \"github\"\nsecret = [\"topsecret-1\", \"\"]\nsecret_env = [\"NEW_SECRET\", \"GONE\"]\nheader = \"X\"\n",
		"[[source]]\nname = \"s\"\nverify = \"none\"\nsecret = \"topsecret-2\"\n",
		"[[source]]\nname = \"s\"\nverify = \"github\"\nsecret = [\"topsecret-3\", 4]\n",
		"[[source]]\nname = \"s\"\nverify = \"github\"\nsecrets = \"topsecret-4\"\n",
		"[[source]]\nname = \"s\"\nverify = \"github\"\nsecret = { value = \"topsecret-5\" }\n",
		"[alert]\nurl = \"ftp://user:topsecret-6@host/\"\n",
		"[[source]]\nname = \"s\"\nverify = \"github\"\nsecret = \"topsecret-7\"\n[[source]]\nname = \"s\"\nverify = \"github\"\nsecret = \"topsecret-7\"\n",
	}
	for i, doc := range leaky {
		_, err := config.Parse("c.toml", []byte(doc), getenv)
		if err == nil {
			t.Fatalf("doc %d: Parse succeeded, want an error", i)
		}
		if strings.Contains(err.Error(), "topsecret") {
			t.Errorf("doc %d: error %q contains a secret value", i, err)
		}
	}
}

func TestValidationError_Error(t *testing.T) {
	tests := []struct {
		e    config.ValidationError
		want string
	}{
		{config.ValidationError{File: "config.toml", Line: 12, Field: "source[0].verify", Value: "stirpe", Msg: "unknown scheme"},
			`config.toml:12: source[0].verify = "stirpe": unknown scheme`},
		{config.ValidationError{File: "config.toml", Field: "delivery.workers", Value: "0", Msg: "want 1 to 256"},
			`config.toml: delivery.workers = 0: want 1 to 256`},
		{config.ValidationError{File: "c.toml", Line: 3, Field: "source[s].secret", Msg: "required"},
			`c.toml:3: source[s].secret: required`},
		{config.ValidationError{Line: 2, Msg: "syntax error: x"}, `line 2: syntax error: x`},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestTarget_Matches(t *testing.T) {
	one := config.Target{Source: "stripe"}
	many := config.Target{Sources: []string{"stripe", "github"}}
	globs := config.Target{Source: "stripe", Events: []string{"invoice.*", "customer.created"}}
	slashes := config.Target{Source: "shop", Events: []string{"orders/*"}}
	tests := []struct {
		name      string
		t         config.Target
		source    string
		eventType string
		want      bool
	}{
		{"Source", one, "stripe", "anything", true},
		{"Other source", one, "github", "anything", false},
		{"Sources first", many, "stripe", "", true},
		{"Sources second", many, "github", "push", true},
		{"Sources other", many, "shopify", "push", false},
		{"Empty events match all", one, "stripe", "", true},
		{"Glob", globs, "stripe", "invoice.paid", true},
		{"Exact", globs, "stripe", "customer.created", true},
		{"No glob matches", globs, "stripe", "customer.deleted", false},
		{"Glob, other source", globs, "github", "invoice.paid", false},
		{"Empty type with globs", globs, "stripe", "", false},
		// Shopify topics hold a slash: "*" is every type there too.
		{"Star crosses slash", config.Target{Source: "shop", Events: []string{"*"}}, "shop", "orders/create", true},
		{"Prefix star crosses slash", config.Target{Source: "shop", Events: []string{"orders*"}}, "shop", "orders/create", true},
		{"Star before slash", config.Target{Source: "shop", Events: []string{"*/create"}}, "shop", "orders/create", true},
		{"Slash glob", slashes, "shop", "orders/create", true},
		{"Slash glob, other topic", slashes, "shop", "products/create", false},
		{"Class with slash", config.Target{Source: "shop", Events: []string{"orders[/]create"}}, "shop", "orders/create", true},
		{"Question mark is one character", config.Target{Source: "shop", Events: []string{"orders?create"}}, "shop", "orders/create", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.t.Matches(tt.source, tt.eventType); got != tt.want {
				t.Fatalf("Matches(%q, %q) = %v, want %v", tt.source, tt.eventType, got, tt.want)
			}
		})
	}
}

func TestTarget_SourceNames(t *testing.T) {
	tests := []struct {
		t    config.Target
		want []string
	}{
		{config.Target{Source: "a"}, []string{"a"}},
		{config.Target{Sources: []string{"a", "b"}}, []string{"a", "b"}},
		{config.Target{}, nil},
	}
	for _, tt := range tests {
		if got := tt.t.SourceNames(); !slices.Equal(got, tt.want) {
			t.Errorf("SourceNames() = %q, want %q", got, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	example, err := os.ReadFile("../config.example.toml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	f.Add([]byte(srcStripe + "[[target]]\nname = \"t\"\nsource = \"s\"\nurl = \"http://127.0.0.1/\"\n"))
	f.Add([]byte("[server]\nlisten = \"\"\"\nx\n\"\"\"\n[[source]]\n[[source.x]]\n"))
	f.Add([]byte("a.b.c = [[1], {x = 1}]\n['q'.\"r\"]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := config.Parse("fuzz.toml", data, func(k string) string { return "v" })
		problems(t, err) // every problem is a *ValidationError
	})
}

// A bad value is echoed as the file has it, and one mistake is one problem.
func TestParse_ValuesShownAsWritten(t *testing.T) {
	doc := `[server]
listen = "nohost"
[delivery]
workers = "4"
[retention]
interval = "90"
[alert]
url = "not a url"
`
	_, err := config.Parse("c.toml", []byte(doc), env(nil))
	want := []string{
		`c.toml:2: server.listen = "nohost": want host:port`,
		`c.toml:4: delivery.workers = "4": want an integer, got a string`,
		`c.toml:6: retention.interval = "90": invalid duration`,
		`c.toml:8: alert.url = "not a url": want an absolute http:// or https:// URL`,
	}
	ps := problems(t, err)
	if len(ps) != len(want) {
		t.Fatalf("%d problems, want %d:\n%v", len(ps), len(want), err)
	}
	for i, p := range ps {
		if !strings.HasPrefix(p.Error(), want[i]) {
			t.Errorf("problem %d = %q, want it to begin %q", i, p.Error(), want[i])
		}
	}
	// A password in a bad URL is still not echoed.
	_, err = config.Parse("c.toml", []byte("[alert]\nurl = \"ftp://u:hunter2@example.com/\"\n"), env(nil))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("err = %v, want a problem that does not show the password", err)
	}
}

// MatchType is path.Match's syntax and meaning where there is no '/' to
// tell them apart: the same answer for every valid pattern of a small
// alphabet against every short type.
func TestMatchType_AsPathMatchWithoutSlash(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const patChars, nameChars = `ab.*?[]^-\`, `ab.-`
	pick := func(alphabet string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	checked := 0
	for range 200000 {
		pat, name := pick(patChars, rng.IntN(7)), pick(nameChars, rng.IntN(6))
		want, err := path.Match(pat, name)
		if err != nil {
			continue // Parse refuses the pattern
		}
		checked++
		if got := config.MatchType(pat, name); got != want {
			t.Fatalf("MatchType(%q, %q) = %v, path.Match says %v", pat, name, got, want)
		}
	}
	if checked < 50000 {
		t.Fatalf("only %d valid cases checked", checked)
	}
}

// '/' is an ordinary character, also in classes and ranges.
func TestMatchType_Slash(t *testing.T) {
	for _, c := range []struct {
		pat, typ string
		want     bool
	}{
		{"*", "orders/create", true},
		{"orders*", "orders/create", true},
		{"*/create", "orders/create", true},
		{"orders?create", "orders/create", true},
		{"orders[/]create", "orders/create", true},
		{"orders[+-0]create", "orders/create", true}, // a range spanning '/'
		{"orders[^/]create", "orders/create", false},
		{"orders/*", "products/create", false},
		{"*.paid", "invoice.paid", true},
		{"invoice.*", "invoice", false},
	} {
		if got := config.MatchType(c.pat, c.typ); got != c.want {
			t.Errorf("MatchType(%q, %q) = %v, want %v", c.pat, c.typ, got, c.want)
		}
	}
}

// permanent_status lists the URL answers that fail a delivery for good;
// none by default, and a value of the wrong type says what it wants.
func TestParse_PermanentStatus(t *testing.T) {
	const tgt = "\n[[target]]\nname = \"t\"\nsource = \"s\"\nurl = \"http://127.0.0.1/\"\n"
	cfg, err := config.Parse("c.toml", []byte(srcStripe+tgt+"permanent_status = [410, 422]\n"+
		"[[target]]\nname = \"u\"\nsource = \"s\"\nurl = \"http://127.0.0.1/\"\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Targets[0].PermanentStatus, []int{410, 422}; !slices.Equal(got, want) {
		t.Errorf("target[t].permanent_status = %v, want %v", got, want)
	}
	if got := cfg.Targets[1].PermanentStatus; len(got) != 0 {
		t.Errorf("target[u].permanent_status = %v, want none by default", got)
	}
	_, err = config.Parse("c.toml", []byte(srcStripe+tgt+"permanent_status = 410\n"), env(nil))
	if ps := problems(t, err); len(ps) != 1 || ps[0].Msg != "want an array of integers, got an integer" {
		t.Errorf("permanent_status = 410: %v, want one problem saying an array of integers is wanted", err)
	}
}

func TestParse_Admin(t *testing.T) {
	cfg, err := config.Parse("c.toml", []byte(srcStripe), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Admin.Listen != "" || cfg.Admin.Token != "" || cfg.Store.MaxQueued != 1_000_000 || cfg.Store.MinFreeDisk != 0 {
		t.Errorf("defaults: admin %+v, max_queued %d, min_free_disk %d; want the admin listener off, 1000000, 0", cfg.Admin, cfg.Store.MaxQueued, cfg.Store.MinFreeDisk)
	}
	doc := srcStripe + "[admin]\nlisten = \"10.0.0.5:8081\"\ntoken_env = \"ADMIN_TOKEN\"\n[store]\nmin_free_disk = \"2GiB\"\nmax_queued = 5000\n"
	cfg, err = config.Parse("c.toml", []byte(doc), env(map[string]string{"ADMIN_TOKEN": "t0k"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Admin.Token != "t0k" || cfg.Store.MinFreeDisk != 2<<30 || cfg.Store.MaxQueued != 5000 {
		t.Errorf("got admin %+v, store %+v", cfg.Admin, cfg.Store)
	}
	// The token is resolved on loopback too: once named, always required.
	cfg, err = config.Parse("c.toml", []byte(srcStripe+"[admin]\nlisten = \"127.0.0.1:8081\"\ntoken_env = \"ADMIN_TOKEN\"\n"), env(map[string]string{"ADMIN_TOKEN": "t0k"}))
	if err != nil || cfg.Admin.Token != "t0k" {
		t.Errorf("loopback with token_env: token %q, %v; want it resolved", cfg.Admin.Token, err)
	}
}
