package main_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// swVerify is a Standard Webhooks verifier written from the specification
// alone, independent of hookbox's provider package: the signature header
// is a space-separated list of "v1,<base64 HMAC-SHA256(key, id.ts.body)>",
// the key the base64 after "whsec_". It reports whether any entry is valid.
func swVerify(secret, id, ts string, body []byte, header string) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	for _, got := range strings.Fields(header) {
		if hmac.Equal([]byte(got), []byte(want)) {
			return true
		}
	}
	return false
}

// The specification's own example checks the independent verifier first.
func TestSigning_ReferenceVector(t *testing.T) {
	const (
		secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		id     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
		ts     = "1614265330"
		body   = `{"test": 2432232314}`
		sig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	)
	if !swVerify(secret, id, ts, []byte(body), sig) {
		t.Fatal("the specification's example does not verify")
	}
	if swVerify(secret, id, ts, []byte(body+" "), sig) {
		t.Fatal("a changed body verifies")
	}
}

// A URL target with sign_secret_env gets every delivery signed over the
// bytes it receives: the same webhook-id for each attempt of one event, a
// timestamp per attempt, one signature per secret of a rotation.
func TestSigning_DeliveriesAreSigned(t *testing.T) {
	const (
		newSecret = "whsec_c2lnbmluZyBrZXkgbmV3IDAxMjM0NTY3ODk="
		oldSecret = "whsec_c2lnbmluZyBrZXkgb2xkIDAxMjM0NTY3ODk="
	)
	t.Setenv("BILLING_SIGNING_SECRET", newSecret)
	t.Setenv("BILLING_SIGNING_SECRET_OLD", oldSecret)
	target := newRecordingTarget(t, failFirst(1))
	tm := MustRunMain(t, deliveryConfig+fmt.Sprintf(`
[[target]]
name = "billing"
source = "shop"
url = %q
sign_secret_env = ["BILLING_SIGNING_SECRET", "BILLING_SIGNING_SECRET_OLD"]
`, target.URL), "")
	body := []byte(`{"id":"ord_1","total":"12.50"}`)
	postEvent(t, tm, "evt_sig", "order.created", body, "accepted")
	waitFor(t, 5*time.Second, "two attempts (the first one refused)", func() bool { return target.Count() == 2 })

	hits := target.Hits()
	for i, h := range hits {
		id, ts, sig := h.Header.Get("Webhook-Id"), h.Header.Get("Webhook-Timestamp"), h.Header.Get("Webhook-Signature")
		if id != "shop:evt_sig:billing" {
			t.Errorf("attempt %d: webhook-id %q, want shop:evt_sig:billing (stable per event and target)", i+1, id)
		}
		sec, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || time.Since(time.Unix(sec, 0)).Abs() > time.Minute {
			t.Errorf("attempt %d: webhook-timestamp %q, want now in Unix seconds", i+1, ts)
		}
		if n := len(strings.Fields(sig)); n != 2 {
			t.Errorf("attempt %d: webhook-signature %q has %d entries, want one per secret", i+1, sig, n)
		}
		for _, secret := range []string{newSecret, oldSecret} {
			if !swVerify(secret, id, ts, h.Body, sig) {
				t.Errorf("attempt %d: the signature does not verify with %s…", i+1, secret[:10])
			}
		}
		if swVerify("whsec_"+base64.StdEncoding.EncodeToString([]byte("some other key")), id, ts, h.Body, sig) {
			t.Errorf("attempt %d: verifies under a key hookbox does not hold", i+1)
		}
		if string(h.Body) != string(body) {
			t.Errorf("attempt %d: body %q, want the event's bytes", i+1, h.Body)
		}
	}
}

// sign_secret_env must name set variables holding whsec_ secrets, on URL
// targets only; hookbox check names the key.
func TestSigning_CheckNamesTheKey(t *testing.T) {
	t.Setenv("SIGN_OK", "whsec_c2lnbmluZyBrZXkgbmV3IDAxMjM0NTY3ODk=")
	t.Setenv("SIGN_BAD", "not-a-whsec-secret!")
	for _, tt := range []struct{ target, want string }{
		{`url = "http://127.0.0.1:9/x"` + "\nsign_secret_env = \"SIGN_UNSET\"", "environment variable SIGN_UNSET is unset or empty"},
		{`url = "http://127.0.0.1:9/x"` + "\nsign_secret_env = \"SIGN_BAD\"", "whsec_"},
		{`command = ["/bin/true"]` + "\nsign_secret_env = \"SIGN_OK\"", "only for url targets"},
	} {
		path := t.TempDir() + "/c.toml"
		writeFile(t, path, deliveryConfig+"\n[[target]]\nname = \"t\"\nsource = \"shop\"\n"+tt.target+"\n")
		_, stderr, err := execute([]string{"check", "--config", path}, func(k string) string {
			return map[string]string{"SIGN_OK": "whsec_c2lnbmluZyBrZXkgbmV3IDAxMjM0NTY3ODk=", "SIGN_BAD": "not-a-whsec-secret!"}[k]
		})
		if err == nil || !strings.Contains(stderr, "sign_secret_env") || !strings.Contains(stderr, tt.want) {
			t.Errorf("check of %q: err %v, stderr %q; want it to name sign_secret_env and say %q", tt.target, err, stderr, tt.want)
		}
		if strings.Contains(stderr, "not-a-whsec-secret!") {
			t.Errorf("check printed the secret: %q", stderr)
		}
	}
}

// The README's receivers, in Go and in Python, verify a real delivery and
// refuse it with one byte changed.
func TestSigning_READMEReceivers(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := func(lang string) string {
		t.Helper()
		m := regexp.MustCompile("(?s)- \\*\\*Signed deliveries\\*\\*.*?```" + lang + "\n(.*?)```").FindSubmatch(readme)
		if m == nil {
			t.Fatalf("README has no %s receiver under Signed deliveries", lang)
		}
		var b strings.Builder
		for _, l := range strings.Split(string(m[1]), "\n") {
			b.WriteString(strings.TrimPrefix(l, "  ") + "\n") // the list item's indent
		}
		return b.String()
	}
	const secret = "whsec_c2lnbmluZyBrZXkgbmV3IDAxMjM0NTY3ODk="
	t.Setenv("RECEIVER_SECRET", secret)
	target := newRecordingTarget(t, nil)
	tm := MustRunMain(t, deliveryConfig+fmt.Sprintf("[[target]]\nname = \"svc\"\nsource = \"shop\"\nurl = %q\nsign_secret_env = \"RECEIVER_SECRET\"\n", target.URL), "")
	postEvent(t, tm, "evt_readme", "order.created", []byte(`{"id":"ord_7"}`), "accepted")
	waitFor(t, 5*time.Second, "the delivery", func() bool { return target.Count() == 1 })
	h := target.Hits()[0]
	headers := map[string]string{}
	for _, k := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
		headers[k] = h.Header.Get(k)
	}
	input, _ := json.Marshal(map[string]any{"headers": headers, "body": string(h.Body), "secret": secret})

	dir := t.TempDir()
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Stdin = bytes.NewReader(input)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	t.Run("Python", func(t *testing.T) {
		if _, err := exec.LookPath("python3"); err != nil {
			t.Skip("python3 is not on PATH")
		}
		writeFile(t, dir+"/r.py", block("python")+`
import json, sys
d = json.load(sys.stdin)
b = d["body"].encode()
print(verified(d["headers"], b, d["secret"]), verified(d["headers"], b + b" ", d["secret"]))
`)
		if got := run("python3", "r.py"); got != "True False" {
			t.Errorf("python receiver: %q, want True False", got)
		}
	})
	t.Run("Go", func(t *testing.T) {
		gobin, err := exec.LookPath("go")
		if err != nil {
			t.Skip("go is not on PATH")
		}
		writeFile(t, dir+"/go.mod", "module r\n\ngo 1.22\n")
		writeFile(t, dir+"/r.go", `package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

`+block("go")+`
func main() {
	var d struct {
		Headers map[string]string
		Body, Secret string
	}
	json.NewDecoder(os.Stdin).Decode(&d)
	r := &http.Request{Header: http.Header{}}
	for k, v := range d.Headers {
		r.Header.Set(k, v)
	}
	fmt.Println(verified(r, []byte(d.Body), d.Secret), verified(r, []byte(d.Body+" "), d.Secret))
}
`)
		if got := run(gobin, "run", "."); got != "true false" {
			t.Errorf("go receiver: %q, want true false", got)
		}
	})
}
