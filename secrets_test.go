package main_test

import (
	hookbox "hookbox"

	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sxPreset is one source of the secrets test and how its sender signs.
type sxPreset struct {
	source string
	secret string
	// sign returns the headers a sender holding secret sends with body, and
	// the signature (or token) value in them.
	sign func(tb testing.TB, secret string, body []byte, id string, now time.Time) (map[string]string, string)
	// sigHeaders are dropped for the "missing signature" request.
	sigHeaders []string
	// token schemes do not sign the body: no tampered case.
	token bool
}

func sxUnix(now time.Time) string { return strconv.FormatInt(now.Unix(), 10) }

var sxPresets = []sxPreset{
	{source: "stripe", secret: "whsec_sx_stripe_c0ffee11", sigHeaders: []string{"Stripe-Signature"},
		sign: func(_ testing.TB, secret string, body []byte, _ string, now time.Time) (map[string]string, string) {
			sig := hexMAC(secret, sxUnix(now), ".", string(body))
			return map[string]string{"Stripe-Signature": "t=" + sxUnix(now) + ",v1=" + sig}, sig
		}},
	{source: "github", secret: "sx_github_d00dfeed22", sigHeaders: []string{"X-Hub-Signature-256"},
		sign: func(_ testing.TB, secret string, body []byte, id string, _ time.Time) (map[string]string, string) {
			sig := hexMAC(secret, string(body))
			return map[string]string{"X-Hub-Signature-256": "sha256=" + sig, "X-GitHub-Delivery": id, "X-GitHub-Event": "issues"}, sig
		}},
	{source: "shopify", secret: "shpss_sx_shopify_33", sigHeaders: []string{"X-Shopify-Hmac-Sha256"},
		sign: func(_ testing.TB, secret string, body []byte, id string, _ time.Time) (map[string]string, string) {
			sig := base64.StdEncoding.EncodeToString(mac(sha256.New, []byte(secret), string(body)))
			return map[string]string{"X-Shopify-Hmac-Sha256": sig, "X-Shopify-Webhook-Id": id, "X-Shopify-Topic": "orders/create"}, sig
		}},
	{source: "slack", secret: "sx_slack_signing_44", sigHeaders: []string{"X-Slack-Signature"},
		sign: func(_ testing.TB, secret string, body []byte, _ string, now time.Time) (map[string]string, string) {
			sig := hexMAC(secret, "v0:", sxUnix(now), ":", string(body))
			return map[string]string{"X-Slack-Signature": "v0=" + sig, "X-Slack-Request-Timestamp": sxUnix(now)}, sig
		}},
	{source: "standard", secret: "whsec_" + base64.StdEncoding.EncodeToString([]byte("sx standard key 55")), sigHeaders: []string{"webhook-signature"},
		sign: func(tb testing.TB, secret string, body []byte, id string, now time.Time) (map[string]string, string) {
			key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
			if err != nil {
				key = []byte(secret) // a wrong secret that is not base64 signs with its bytes
			}
			sig := base64.StdEncoding.EncodeToString(mac(sha256.New, key, id, ".", sxUnix(now), ".", string(body)))
			return map[string]string{"webhook-id": id, "webhook-timestamp": sxUnix(now), "webhook-signature": "v1," + sig}, sig
		}},
	{source: "hmac", secret: "sx_hmac_66aa", sigHeaders: []string{"X-Signature"},
		sign: func(_ testing.TB, secret string, body []byte, _ string, _ time.Time) (map[string]string, string) {
			sig := hexMAC(secret, string(body))
			return map[string]string{"X-Signature": "sha256=" + sig}, sig
		}},
	{source: "gitlab", secret: "sx_gitlab_token_77bb", sigHeaders: []string{"X-Gitlab-Token"}, token: true,
		sign: func(_ testing.TB, secret string, _ []byte, id string, _ time.Time) (map[string]string, string) {
			return map[string]string{"X-Gitlab-Token": secret, "X-Gitlab-Event-UUID": id, "X-Gitlab-Event": "Push Hook"}, secret
		}},
	{source: "token", secret: "sx_plain_token_88cc", sigHeaders: []string{"X-Webhook-Token"}, token: true,
		sign: func(_ testing.TB, secret string, _ []byte, id string, _ time.Time) (map[string]string, string) {
			return map[string]string{"X-Webhook-Token": secret, "X-Event-Id": id}, secret
		}},
}

// sxConfig is the secrets test's config: every preset (stripe's secret from
// the environment), a URL target and an alert URL with passwords that
// cannot be reached, and a failing command target. Targets die at the first
// failure.
func sxConfig(closed string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `
[delivery]
max_attempts = 1
backoff = "10ms"

[alert]
url = "http://alerts:sx_alert_pass_31@%s/alert"
timeout = "1s"

[[target]]
name = "billing"
source = "stripe"
url = "http://hookbox:sx_target_pass_29@%s/hook?key=sx_query_key_27"
timeout = "1s"

[[target]]
name = "script"
source = "github"
command = ["/bin/false"]
env = { API_KEY = "sx_command_env_key_25" }
timeout = "5s"
`, closed, closed)
	for _, p := range sxPresets {
		fmt.Fprintf(&b, "\n[[source]]\nname = %q\nverify = %q\n", p.source, p.source)
		switch p.source {
		case "stripe":
			b.WriteString("secret_env = \"SX_STRIPE_SECRET\"\n")
		case "standard":
			// From the environment too: a read command run without it must
			// not check (and fail on) the whsec_ format of an unset secret.
			b.WriteString("secret_env = \"SX_STANDARD_SECRET\"\n")
		case "hmac":
			fmt.Fprintf(&b, "secret = %q\nheader = \"X-Signature\"\nprefix = \"sha256=\"\nevent_id = \"json:id\"\n", p.secret)
		case "token":
			fmt.Fprintf(&b, "secret = %q\nheader = \"X-Webhook-Token\"\nevent_id = \"header:X-Event-Id\"\n", p.secret)
		default:
			fmt.Fprintf(&b, "secret = %q\n", p.secret)
		}
	}
	return b.String()
}

// sxBody is an event body whose id (for presets that read it from JSON)
// is id.
func sxBody(id string) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"event_id":%q,"type":"invoice.paid","event":{"type":"app_mention"},"amount":100}`, id, id))
}

// TestSecrets_NotInLogsOrErrors runs valid, invalid, tampered and unsigned
// requests for every preset, a delivery and an alert that fail, and bad
// configs, and checks that no secret, no token and no signature hookbox
// computed for a rejected request appears in a log line, an answer or any
// command's output. The signatures of accepted requests were sent by their
// sender and are kept with the stored headers; they may appear there, and
// only there.
func TestSecrets_NotInLogsOrErrors(t *testing.T) {
	for _, p := range sxPresets {
		switch p.source {
		case "stripe":
			t.Setenv("SX_STRIPE_SECRET", p.secret)
		case "standard":
			t.Setenv("SX_STANDARD_SECRET", p.secret)
		}
	}
	closed := freeAddr(t)
	cfgText := sxConfig(closed)
	tm := MustRunMain(t, cfgText, "", func(m *hookbox.Main) {
		m.AlertBackoff = 10 * time.Millisecond
		m.RefusedLogBurst = 1000 // every refused request's line is looked at
	})

	// never: in logs, answers or command output.
	never := []string{"sx_alert_pass_31", "sx_target_pass_29", "sx_query_key_27", "sx_command_env_key_25"}
	// notInLogs: also allowed in the stored headers shown by hookbox event.
	var notInLogs []string
	var answers []string
	now := time.Now()
	for _, p := range sxPresets {
		never = append(never, p.secret)
		send := func(kind string, h map[string]string, body []byte, want int) {
			t.Helper()
			code, answer := tm.Post("/hooks/"+p.source, h, body)
			if code != want {
				t.Errorf("%s %s: status=%d, want %d (%s)", p.source, kind, code, want, answer)
			}
			answers = append(answers, answer)
		}
		id := "sx-" + p.source
		body := sxBody(id)
		h, sig := p.sign(t, p.secret, body, id, now)
		if p.token {
			never = append(never, sig)
		} else {
			notInLogs = append(notInLogs, sig)
		}
		send("valid", h, body, 200)

		// Rejected requests carry bodies of their own, so that the
		// signatures hookbox would compute for them were never sent.
		wrong := "wrong_" + p.secret
		wbody := sxBody(id + "-w")
		wh, wsig := p.sign(t, wrong, wbody, id+"-w", now)
		_, correct := p.sign(t, p.secret, wbody, id+"-w", now)
		never = append(never, wsig, correct, wrong)
		send("invalid", wh, wbody, 401)

		if !p.token {
			tampered := bytes.Replace(body, []byte(`"amount":100`), []byte(`"amount":999`), 1)
			_, correct := p.sign(t, p.secret, tampered, id, now)
			never = append(never, correct)
			send("tampered", h, tampered, 401)
		}

		mbody := sxBody(id + "-m")
		mh, correct := p.sign(t, p.secret, mbody, id+"-m", now)
		for _, k := range p.sigHeaders {
			delete(mh, k)
		}
		never = append(never, correct)
		send("missing", mh, mbody, 401)
	}

	// Both targets fail once and die; the alert for each fails 5 times.
	waitFor(t, 10*time.Second, "two dead letters and two given-up alerts", func() bool {
		dl, err := tm.DB.DeadLetters(context.Background(), false, 0)
		return err == nil && len(dl) == 2 && strings.Count(tm.Logs.String(), "alert failed; giving up") == 2
	})

	// The read commands, against the live store.
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "hookbox.toml")
	full := fmt.Sprintf("[store]\npath = %q\n", filepath.Join(tm.Dir, "hookbox.db")) + cfgText
	if err := os.WriteFile(cfgPath, []byte(full), 0o600); err != nil {
		t.Fatal(err)
	}
	var said strings.Builder
	runCmd := func(args ...string) string {
		t.Helper()
		out, errb, err := execute(args, os.Getenv)
		if err != nil {
			t.Errorf("hookbox %s: %v (stderr %s)", strings.Join(args, " "), err, errb)
		}
		said.WriteString(out + errb)
		return out
	}
	runCmd("check", "--config", cfgPath)
	events := runCmd("events", "--config", cfgPath, "--json")
	runCmd("events", "--config", cfgPath)
	runCmd("dead", "--config", cfgPath, "--json")
	runCmd("dead", "--config", cfgPath, "--all")
	// Without the service's environment (the secret variables unset), the
	// commands that only read the store still work.
	if _, stderr, err := execute([]string{"events", "--config", cfgPath}, func(string) string { return "" }); err != nil {
		t.Errorf("events without the secrets' environment: %v (stderr %s)", err, stderr)
	}
	var stored int
	for _, line := range strings.Split(strings.TrimSpace(events), "\n") {
		var e struct {
			ID     int64  `json:"id"`
			Source string `json:"source"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("events --json line %q: %v", line, err)
		}
		stored++
		id := strconv.FormatInt(e.ID, 10)
		detail := runCmd("event", "--config", cfgPath, "--json", id)
		runCmd("event", "--config", cfgPath, id)
		if e.Source == "gitlab" || e.Source == "token" {
			var d struct {
				Headers map[string][]string `json:"headers"`
			}
			if err := json.Unmarshal([]byte(detail), &d); err != nil {
				t.Fatal(err)
			}
			k := map[string]string{"gitlab": "X-Gitlab-Token", "token": "X-Webhook-Token"}[e.Source]
			if got := d.Headers[k]; len(got) != 1 || got[0] != "[redacted]" {
				t.Errorf("%s: stored %s = %q, want [redacted]", e.Source, k, got)
			}
		}
	}
	if stored != len(sxPresets) {
		t.Errorf("stored events=%d, want %d (one valid request per preset)", stored, len(sxPresets))
	}

	// Config errors name the key, never the value of a secret.
	bad := map[string]string{
		"unset secret_env":           "[[source]]\nname = \"s\"\nverify = \"stripe\"\nsecret_env = \"SX_NOT_SET_ANYWHERE\"\n",
		"standard secret not base64": "[[source]]\nname = \"s\"\nverify = \"standard\"\nsecret_env = \"SX_BAD_WHSEC\"\n",
		"empty secret in a list":     "[[source]]\nname = \"s\"\nverify = \"github\"\nsecret = [\"sx_listed_secret_91\", \"\"]\n",
		"hmac with a bad algorithm":  "[[source]]\nname = \"s\"\nverify = \"hmac\"\nsecret = \"sx_algo_secret_92\"\nheader = \"X-S\"\nalgorithm = \"md5\"\nevent_id = \"json:id\"\n",
		"secret of the wrong type":   "[[source]]\nname = \"s\"\nverify = \"github\"\nsecret = { value = \"sx_table_secret_93\" }\n",
		"unterminated secret string": "[[source]]\nname = \"s\"\nverify = \"github\"\nsecret = \"sx_unterminated_secret_94\n",
		"secret on a duplicate key":  "[[source]]\nname = \"s\"\nverify = \"github\"\nsecret = \"sx_dup_secret_95\"\nsecret = \"sx_dup_secret_96\"\n",
	}
	t.Setenv("SX_BAD_WHSEC", "whsec_!!sx_not_base64_97")
	never = append(never, "sx_listed_secret_91", "sx_algo_secret_92", "sx_table_secret_93", "sx_unterminated_secret_94",
		"sx_dup_secret_95", "sx_dup_secret_96", "sx_not_base64_97")
	var cfgErrs strings.Builder
	for name, text := range bad {
		p := filepath.Join(dir, "bad.toml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		out, errb, err := execute([]string{"check", "--config", p}, os.Getenv)
		if err == nil {
			t.Errorf("%s: check passed, want an error", name)
			continue
		}
		msg := err.Error() + "\n" + out + errb
		t.Logf("%s: %s", name, strings.TrimSpace(msg))
		cfgErrs.WriteString(msg)
	}

	logs := tm.Logs.String()
	for _, s := range never {
		for where, text := range map[string]string{"log": logs, "answer": strings.Join(answers, "\n"), "command output": said.String(), "config error": cfgErrs.String()} {
			if s != "" && strings.Contains(text, s) {
				t.Errorf("%s contains %q:\n%s", where, s, sxAround(text, s))
			}
		}
	}
	for _, s := range notInLogs {
		if strings.Contains(logs, s) || strings.Contains(strings.Join(answers, "\n"), s) {
			t.Errorf("a log line or an answer contains the signature %q", s)
		}
	}
}

// sxAround is the line of text holding s.
func sxAround(text, s string) string {
	i := strings.Index(text, s)
	start := strings.LastIndexByte(text[:i], '\n') + 1
	end := strings.IndexByte(text[i:], '\n')
	if end < 0 {
		return text[start:]
	}
	return text[start : i+end]
}
