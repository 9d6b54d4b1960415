package main_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/fire"
	"hookbox/provider"
)

// buildFireTarget returns the fire tests' command target,
// testdata/firetarget, built on first use (without the race detector, so
// each delivery starts fast).
func buildFireTarget(tb testing.TB) string {
	tb.Helper()
	return builtFireTarget.build(tb, "./testdata/firetarget", "firetarget")
}

// fireProbe is the --probe-cmd that reads firetarget's log: the count of
// HOOKBOX_EVENT_ID's lines, and the version of the last line of
// HOOKBOX_RESOURCE_ID's resource, as {"count":N,"version":"V"}.
const fireProbe = `$1 == ENVIRON["HOOKBOX_EVENT_ID"] { n++ }
index($2, ENVIRON["HOOKBOX_RESOURCE_ID"]) && $3 != "-" { v = $3 }
END { printf "{\"count\":%d", n; if (v != "") printf ",\"version\":\"%s\"", v; print "}" }`

// effect is a line of the helper target's log.
type effect struct{ ID, Key, Version string }

func readEffects(path string) ([]effect, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []effect
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Split(line, "\t"); len(f) == 3 {
			out = append(out, effect{f[0], f[1], f[2]})
		}
	}
	return out, nil
}

// fireFamilies are the presets the end-to-end test fires at hookbox: one
// for each way of signing (a timestamped header, the body alone, a signed
// id, a token, the URL, the query, a private key, the body's own
// signature, the body's own timestamp, basic credentials, the generic
// schemes), with the source settings each needs.
var fireFamilies = map[string]string{
	"stripe":      `secret = "whsec_fire_test"`,
	"github":      `secret = "gh_fire_test"`,
	"shopify":     `secret = "shpss_fire_test"`,
	"slack":       `secret = "slack_fire_test"`,
	"standard":    `secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"`,
	"gitlab":      `secret = "gl_fire_test"`,
	"twilio":      `secret = "twilio_fire_test"`,
	"mercadopago": `secret = "mp_fire_test"`,
	"hubspot":     `secret = "hubspot_fire_test"`,
	"linear":      `secret = "lin_fire_test"`,
	"mailgun":     `secret = "mailgun_fire_test"`,
	"postmark":    `secret = "postmark:fire-test"`,
	"discord":     "", // the key pair's, set by the test
	"sendgrid":    "",
	// Sentry sends each retry under a new Request-ID: deduped by the body.
	"sentry": `secret = "sentry_fire_test"` + "\n" + `event_id = "body-sha256"`,
	"hmac":   `secret = "hmac_fire_test"` + "\n" + `header = "X-Signature"` + "\n" + `prefix = "sha256="` + "\n" + `event_id = "json:id"`,
	"token":  `secret = "tok_fire_test"` + "\n" + `header = "X-Webhook-Token"` + "\n" + `event_id = "header:X-Event-Id"`,
}

// fireHookbox is a hookbox serve child process with a source for each of
// fireFamilies and a command target that records every event's effect.
type fireHookbox struct {
	URL, Config, Log string
	// Getenv holds the private keys of discord and sendgrid, whose
	// sources hold the public ones.
	Getenv func(string) string
	Bin    string
	// Probe is the --probe-cmd that counts the helper target's effects
	// (fireProbe).
	Probe string
}

// startFireHookbox runs it with the target's order set to order: with
// "latest", each source reads its sample's resource key and version.
func startFireHookbox(t *testing.T, order string) *fireHookbox {
	t.Helper()
	if _, err := exec.LookPath("awk"); err != nil {
		t.Skip("awk is not on PATH: the probe command is an awk program")
	}
	bin, target := buildHookbox(t), buildFireTarget(t)
	dir := t.TempDir()
	edPub, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalECPrivateKey(ec)
	ecPub, _ := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	keys := map[string]string{
		"DISCORD_KEY":  hex.EncodeToString(edPriv),
		"SENDGRID_KEY": string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ecDER})),
	}
	settings := map[string]string{
		"discord":  fmt.Sprintf("secret = %q", hex.EncodeToString(edPub)),
		"sendgrid": fmt.Sprintf("secret = %q", base64.StdEncoding.EncodeToString(ecPub)),
	}
	h := &fireHookbox{Log: filepath.Join(dir, "effects.log"), Bin: bin, Getenv: func(k string) string { return keys[k] }}
	// The probe reads the log before the first effect is written.
	if err := os.WriteFile(h.Log, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	var b strings.Builder
	fmt.Fprintf(&b, "[server]\nlisten = %q\n\n[store]\npath = %q\n\n", addr, filepath.Join(dir, "hookbox.db"))
	var names []string
	for name, s := range fireFamilies {
		if s == "" {
			s = settings[name]
		}
		if p, _ := provider.Lookup(name); order != "none" && p.Samples[0].Key != "" {
			s += fmt.Sprintf("\norder_key = %q\norder_version = %q", p.Samples[0].Key, p.Samples[0].Version)
		}
		fmt.Fprintf(&b, "[[source]]\nname = %q\nverify = %q\n%s\n\n", name, name, s)
		names = append(names, name)
	}
	argv, _ := json.Marshal([]string{target, h.Log})
	probe, _ := json.Marshal([]string{"awk", "-F", "\t", fireProbe, h.Log})
	h.Probe = string(probe)
	srcs, _ := json.Marshal(names)
	fmt.Fprintf(&b, "[[target]]\nname = \"effects\"\nsources = %s\ncommand = %s\norder = %q\n", srcs, argv, order)
	h.Config = filepath.Join(dir, "hookbox.toml")
	if err := os.WriteFile(h.Config, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	startServe(t, bin, h.Config, addr)
	h.URL = "http://" + addr
	return h
}

// fireArgs are the flags that fire hookbox's source name with, quickly:
// the storm compressed a millionfold, the probe watched 5 s at most.
func (h *fireHookbox) fireArgs(name string, extra ...string) []string {
	args := []string{"fire", "--config", h.Config, "--source", name, "--speed", "1e6", "--wait", "5s", "--probe-cmd", h.Probe}
	switch name {
	case "discord":
		args = append(args, "--secret-env", "DISCORD_KEY")
	case "sendgrid":
		args = append(args, "--secret-env", "SENDGRID_KEY")
	}
	return append(append(args, extra...), h.URL+"/hooks/"+name)
}

// fire runs `hookbox fire` in this process, with --json, and returns the
// results by scenario.
func (h *fireHookbox) fire(t *testing.T, name string, extra ...string) (map[string]fire.Result, error) {
	t.Helper()
	stdout, stderr, err := execute(h.fireArgs(name, append([]string{"--json"}, extra...)...), h.Getenv)
	results := map[string]fire.Result{}
	for _, r := range jsonLines[fire.Result](t, stdout) {
		results[r.Scenario] = r
	}
	if len(results) == 0 {
		t.Fatalf("fire %s: no results: %v\n%s", name, err, stderr)
	}
	return results, err
}

// Fired at hookbox, every family's events are received once, whatever
// the scenario: dup-seq, dup-par, lost-response, timeout and storm are ok
// (storm is skipped for a provider that never retries), through each
// scheme's real verifier and a command target whose effects a probe
// command counts. Out-of-order is ok too: the target has order =
// "latest", so the older version, sent after the newer one was delivered,
// is skipped as stale (with order = "none" it is STALE: TestFire_JUnit,
// TestFire_ExitCodes). Where the sample carries no version, out of order
// cannot be judged: acked.
func TestFire_AgainstHookbox(t *testing.T) {
	h := startFireHookbox(t, "latest")
	var mu sync.Mutex
	failures := map[string][]string{}
	sem := make(chan struct{}, 9)
	var wg sync.WaitGroup
	for name := range fireFamilies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			stdout, stderr, err := execute(h.fireArgs(name, "--json"), h.Getenv)
			var fails []string
			results := map[string]fire.Result{}
			dec := json.NewDecoder(strings.NewReader(stdout))
			for {
				var r fire.Result
				if err := dec.Decode(&r); err != nil {
					break
				}
				results[r.Scenario] = r
			}
			p, _ := provider.Lookup(name)
			for _, scenario := range fire.Scenarios {
				want := fire.OK
				switch {
				case scenario == fire.Storm && len(p.Retries.Delays) == 0:
					want = fire.Skip
				case scenario == fire.OutOfOrder && p.Samples[0].Version == "":
					want = fire.Acked
				}
				r, ok := results[scenario]
				if !ok {
					fails = append(fails, fmt.Sprintf("%s: no result (%v)\n%s", scenario, err, stderr))
					continue
				}
				if r.Verdict != want {
					b, _ := json.Marshal(r)
					fails = append(fails, fmt.Sprintf("%s: %s, want %s: %s", scenario, r.Verdict, want, b))
				}
			}
			if p.Samples[0].Version != "" && err != nil {
				fails = append(fails, fmt.Sprintf("error %v, want none: every scenario ok", err))
			}
			mu.Lock()
			failures[name] = fails
			mu.Unlock()
		}()
	}
	wg.Wait()
	for name, fails := range failures {
		for _, f := range fails {
			t.Errorf("%s: %s", name, f)
		}
	}
	if len(failures) != len(fireFamilies) {
		t.Errorf("%d families fired, want %d", len(failures), len(fireFamilies))
	}
	// Each event's effect ran once: the log has no id twice.
	effects, err := readEffects(h.Log)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range effects {
		if seen[e.ID] {
			t.Errorf("event %s ran twice", e.ID)
		}
		seen[e.ID] = true
	}
}

// --junit writes a JUnit XML report, a test case a scenario, whose
// failures are the failed scenarios.
func TestFire_JUnit(t *testing.T) {
	h := startFireHookbox(t, "none")
	path := filepath.Join(t.TempDir(), "fire.xml")
	results, err := h.fire(t, "github", "--junit", path, "--scenario", "dup-seq,out-of-order,storm")
	if err == nil || results[fire.OutOfOrder].Verdict != fire.Stale {
		t.Fatalf("error %v, out-of-order %s; want STALE, and an error", err, results[fire.OutOfOrder].Verdict)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName xml.Name `xml:"testsuites"`
		Suites  []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Skipped  int `xml:"skipped,attr"`
			Cases    []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("JUnit XML: %v\n%s", err, b)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d suites, want 1\n%s", len(doc.Suites), b)
	}
	s := doc.Suites[0]
	if s.Tests != 3 || len(s.Cases) != 3 || s.Failures != 1 || s.Skipped != 1 {
		t.Fatalf("suite: %d tests, %d cases, %d failures, %d skipped; want 3, 3, 1 (out-of-order), 1 (GitHub's storm)\n%s", s.Tests, len(s.Cases), s.Failures, s.Skipped, b)
	}
	for i, want := range []string{fire.DupSeq, fire.OutOfOrder, fire.Storm} {
		if s.Cases[i].Name != want {
			t.Errorf("case %d: %s, want %s", i, s.Cases[i].Name, want)
		}
	}
	if s.Cases[1].Failure == nil || s.Cases[2].Skipped == nil || s.Cases[0].Failure != nil {
		t.Errorf("cases: %+v", s.Cases)
	}
}

// The built binary exits 0 when every scenario is ok, 1 on a STALE, 2 on
// a usage mistake, and prints the table.
func TestFire_ExitCodes(t *testing.T) {
	h := startFireHookbox(t, "none")
	run := func(env []string, args ...string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, h.Bin, args...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, string(out)
		case errors.As(err, &ee):
			return ee.ExitCode(), string(out)
		}
		t.Fatalf("%v: %v", args, err)
		return -1, ""
	}
	stripe := func(extra ...string) []string { return h.fireArgs("stripe", extra...) }
	row := func(out, scenario, verdict string) bool {
		return regexp.MustCompile(`(?m)^` + scenario + ` +` + verdict + ` `).MatchString(out)
	}
	// The probe as words: a script and its argument.
	script := filepath.Join(t.TempDir(), "probe.sh")
	if err := os.WriteFile(script, []byte("exec awk -F '\t' '"+fireProbe+"' \"$1\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	words := "sh " + script + " " + h.Log
	if code, out := run(nil, stripe("--probe-cmd", words, "--scenario", "dup-seq,dup-par,lost-response,timeout,storm")...); code != 0 || !row(out, "storm", "ok") || !row(out, "dup-par", "ok") || !strings.Contains(out, "probe: "+words) {
		t.Errorf("every scenario but out-of-order: exit %d, want 0\n%s", code, out)
	}
	if code, out := run(nil, stripe("--scenario", "out-of-order")...); code != 1 || !row(out, "out-of-order", "STALE") || !strings.Contains(out, "fire: 1 of 1 scenarios failed: out-of-order STALE") {
		t.Errorf("out-of-order: exit %d, want 1 and STALE\n%s", code, out)
	}
	if code, out := run([]string{"S=whsec_x"}, "fire", "--preset", "stripe", "--secret-env", "S", "https://api.example.com/hooks"); code != 2 || !strings.Contains(out, "--yes") {
		t.Errorf("a URL beyond loopback without --yes: exit %d, want 2\n%s", code, out)
	}
	if code, out := run(nil, "fire", "--help"); code != 0 || !strings.Contains(out, "usage: hookbox fire [flags] URL") {
		t.Errorf("--help: exit %d, want 0\n%s", code, out)
	}
}
