package main_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hookbox/provider"
)

// presetSecret is a secret of p's format that names p, so that a leak is
// found and traced to its scheme, or "" for a scheme whose source holds no
// secret of its own (none) or only the public half of a key pair
// (discord, sendgrid: their senders' private keys are the test's, not
// hookbox's).
func presetSecret(p provider.Provider, wrong bool) string {
	if p.Unsigned {
		return ""
	}
	tag := "sx-right-" + p.Name
	if wrong {
		tag = "sx-wrong-" + p.Name
	}
	for _, s := range []string{
		"whsec_" + base64.StdEncoding.EncodeToString([]byte(tag+"-key-material")),
		p.Name + ":" + tag, // user:password schemes (postmark)
	} {
		if sg, err := provider.NewSigner(provider.Options{Scheme: p.Name, Secrets: []string{s}, Header: "X-Sig"}); err == nil && sg.PublicKey() == "" {
			return s
		}
	}
	return ""
}

// Every preset of the registry, not only the first ones: signed webhooks
// fired at hookbox with the right secret (accepted) and with a wrong one
// (refused), then listed and shown by the read commands. Neither secret
// appears in serve's log, in an answer fire reports, or in what the
// commands print.
func TestSecrets_EveryPresetNeverShown(t *testing.T) {
	var right, wrong strings.Builder
	var names, secrets []string
	for _, p := range provider.All() {
		s, w := presetSecret(p, false), presetSecret(p, true)
		if s == "" {
			continue
		}
		names = append(names, p.Name)
		secrets = append(secrets, s, w)
		for _, c := range []struct {
			b      *strings.Builder
			secret string
		}{{&right, s}, {&wrong, w}} {
			fmt.Fprintf(c.b, "[[source]]\nname = %q\nverify = %q\nsecret = %q\n", p.Name, p.Name, c.secret)
			if p.Header != "" {
				c.b.WriteString("header = \"X-Sig\"\n")
			}
			if p.EventID == "" {
				c.b.WriteString("event_id = \"body-sha256\"\n")
			}
			c.b.WriteString("\n")
		}
	}
	if len(names) < 25 {
		t.Fatalf("only %d presets have a secret of their own: %v", len(names), names)
	}
	tm := MustRunMain(t, right.String(), "")

	dir := t.TempDir()
	store := fmt.Sprintf("[store]\npath = %q\n\n", filepath.Join(tm.Dir, "hookbox.db"))
	rightCfg, wrongCfg := filepath.Join(dir, "right.toml"), filepath.Join(dir, "wrong.toml")
	writeFile(t, rightCfg, store+right.String())
	writeFile(t, wrongCfg, store+wrong.String())

	var said strings.Builder
	run := func(wantErr bool, args ...string) string {
		t.Helper()
		out, errb, err := execute(args, os.Getenv)
		if (err != nil) != wantErr {
			t.Errorf("hookbox %s: error %v, want error %v\n%s%s", strings.Join(args, " "), err, wantErr, out, errb)
		}
		said.WriteString(out + errb)
		return out
	}
	for _, name := range names {
		url := tm.URL + "/hooks/" + name
		for _, c := range []struct {
			cfg    string
			refuse bool
		}{{rightCfg, false}, {wrongCfg, true}} {
			out := run(c.refuse, "fire", "--config", c.cfg, "--source", name, "--scenario", "dup-seq", "--json", url)
			if want := map[bool]string{false: `"status":200`, true: `"status":401`}[c.refuse]; !strings.Contains(out, want) {
				t.Errorf("%s with %s: no answer with %s in %s", name, filepath.Base(c.cfg), want, out)
			}
		}
	}
	events := run(false, "events", "--config", rightCfg, "--json", "--limit", "1000")
	stored := map[string]bool{}
	for _, e := range jsonLines[struct {
		ID     int64  `json:"id"`
		Source string `json:"source"`
	}](t, events) {
		stored[e.Source] = true
		run(false, "event", "--config", rightCfg, fmt.Sprint(e.ID))
	}
	for _, name := range names {
		if !stored[name] {
			t.Errorf("%s: no event stored from the right secret's requests", name)
		}
	}

	for i, s := range secrets {
		name := names[i/2]
		if strings.Contains(tm.Logs.String(), s) {
			t.Errorf("%s: serve's log holds the secret %q", name, s)
		}
		if strings.Contains(said.String(), s) {
			t.Errorf("%s: a command printed the secret %q", name, s)
		}
		// The key material inside a whsec_ secret, on its own.
		if b64, ok := strings.CutPrefix(s, "whsec_"); ok {
			if key, _ := base64.StdEncoding.DecodeString(b64); strings.Contains(tm.Logs.String()+said.String(), string(key)) {
				t.Errorf("%s: the secret's key %q was printed", name, key)
			}
		}
	}
}
