package provider_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"hookbox/provider"
)

func TestVerify_Vectors(t *testing.T) {
	vs := loadVectors(t)
	if got, want := len(vs), 53; got != want {
		t.Fatalf("vectors=%d, want %d", got, want)
	}
	checked := map[string]int{}
	for _, c := range vs {
		t.Run(c.Provider+"/"+c.Name, func(t *testing.T) {
			if _, ok := provider.Lookup(vectorScheme(c)); !ok {
				why, listed := notPresets[c.Provider]
				if !listed {
					t.Fatalf("provider %q is neither in the registry nor listed in notPresets", c.Provider)
				}
				t.Skip(why)
			}
			err := verifyCase(mustNew(t, vectorOptions(t, c)), c)
			if got := err == nil; got != c.ExpectValid {
				t.Fatalf("valid=%t (err=%v), want %t", got, err, c.ExpectValid)
			}
			leaks := []string{c.Secret}
			for _, hv := range c.Headers {
				// Every signature-bearing value is long; short ones (event
				// names, ids) may legitimately be named.
				if len(hv) >= 20 && !strings.HasPrefix(hv, "msg_") {
					leaks = append(leaks, hv)
				}
			}
			checkErr(t, err, leaks...)
			checked[c.Provider]++
		})
	}
	// Every preset in the file was exercised; nothing was silently skipped.
	for _, p := range []string{"standard-webhooks", "svix", "stripe", "github", "shopify", "slack", "gitlab", "twilio", "mercadopago", "generic-hmac-sha256"} {
		if checked[p] == 0 {
			t.Errorf("provider %s: checked 0 cases, want > 0", p)
		}
	}
	total := 0
	for _, n := range checked {
		total += n
	}
	skipped := 0
	for _, c := range vs {
		if _, ok := provider.Lookup(vectorScheme(c)); !ok {
			skipped++
		}
	}
	if !t.Failed() && total+skipped != len(vs) {
		t.Errorf("checked %d + skipped %d cases, want %d", total, skipped, len(vs))
	}
}

func TestVerify_TamperedBody(t *testing.T) {
	now := time.Unix(1700000000, 0)
	body := []byte(`{"id":"evt_1","type":"invoice.paid","amount":1999}`)
	for _, f := range fixtures() {
		t.Run(f.name, func(t *testing.T) {
			v := mustNew(t, withSecrets(f.opts, f.secrets[0]))
			h, sig := f.sign(t, f.secrets[0], body, now)
			wantErr(t, v.Verify(h, body, now), nil)
			for _, i := range []int{0, len(body) / 2, len(body) - 1} {
				tampered := append([]byte(nil), body...)
				tampered[i] ^= 0x01
				err := v.Verify(h, tampered, now)
				if !f.signsBody {
					// gitlab and token authenticate the sender, not the bytes.
					wantErr(t, err, nil)
					continue
				}
				_, good := f.sign(t, f.secrets[0], tampered, now)
				wantErr(t, err, provider.ErrMismatch, f.secrets[0], sig, good)
			}
			if f.signsBody {
				wantErr(t, v.Verify(h, append(body, ' '), now), provider.ErrMismatch)
				wantErr(t, v.Verify(h, nil, now), provider.ErrMismatch)
			}
		})
	}
}

func TestVerify_Rotation(t *testing.T) {
	now := time.Unix(1700000000, 0)
	body := []byte(`{"id":"evt_rotate"}`)
	for _, f := range fixtures() {
		t.Run(f.name, func(t *testing.T) {
			old, cur, other := f.secrets[0], f.secrets[1], f.secrets[2]
			v := mustNew(t, withSecrets(f.opts, old, cur))
			for _, s := range []string{old, cur} {
				h, _ := f.sign(t, s, body, now)
				wantErr(t, v.Verify(h, body, now), nil)
			}
			h, sig := f.sign(t, other, body, now)
			wantErr(t, v.Verify(h, body, now), provider.ErrMismatch, old, cur, other, sig)
		})
	}
}

func TestVerify_Tolerance(t *testing.T) {
	now := time.Unix(1700000000, 0)
	body := []byte(`{"id":"evt_clock"}`)
	tests := []struct {
		scheme    string
		tolerance time.Duration
		skew      time.Duration // signed at now+skew
		want      error
	}{
		{"stripe", 0, -300 * time.Second, nil},
		{"stripe", 0, -301 * time.Second, provider.ErrTimestamp},
		{"stripe", 0, 301 * time.Second, nil}, // future accepted, as stripe-go does
		{"stripe", 0, 24 * time.Hour, nil},
		{"stripe", 10 * time.Second, -10 * time.Second, nil},
		{"stripe", 10 * time.Second, -11 * time.Second, provider.ErrTimestamp},
		{"slack", 0, -300 * time.Second, nil},
		{"slack", 0, -301 * time.Second, provider.ErrTimestamp},
		{"slack", 0, 300 * time.Second, nil},
		{"slack", 0, 301 * time.Second, provider.ErrTimestamp},
		{"slack", time.Hour, -3600 * time.Second, nil},
		{"slack", time.Hour, 3601 * time.Second, provider.ErrTimestamp},
		{"standard", 0, -300 * time.Second, nil},
		{"standard", 0, -301 * time.Second, provider.ErrTimestamp},
		{"standard", 0, 300 * time.Second, nil},
		{"standard", 0, 301 * time.Second, provider.ErrTimestamp},
		{"standard", 30 * time.Second, 31 * time.Second, provider.ErrTimestamp},
		{"zoom", 0, -2 * time.Hour, nil},
		{"zoom", 0, -2*time.Hour - time.Second, provider.ErrTimestamp},
		{"zoom", 0, 2 * time.Hour, nil},
		{"zoom", 0, 2*time.Hour + time.Second, provider.ErrTimestamp},
		{"zoom", 5 * time.Minute, -301 * time.Second, provider.ErrTimestamp},
		{"twitch", 0, -10 * time.Minute, nil},
		{"twitch", 0, -10*time.Minute - time.Millisecond, provider.ErrTimestamp},
		{"twitch", 0, 24 * time.Hour, nil}, // the documentation bounds the past only
		{"discord", 0, -300 * time.Second, nil},
		{"discord", 0, -301 * time.Second, provider.ErrTimestamp},
		{"discord", 0, 301 * time.Second, provider.ErrTimestamp},
	}
	byName := map[string]fixture{}
	for _, f := range fixtures() {
		byName[f.name] = f
	}
	for _, tt := range tests {
		t.Run(tt.scheme+"/"+tt.tolerance.String()+"/"+tt.skew.String(), func(t *testing.T) {
			f := byName[tt.scheme]
			o := withSecrets(f.opts, f.secrets[0])
			o.Tolerance = tt.tolerance
			v := mustNew(t, o)
			h, sig := f.sign(t, f.secrets[0], body, now.Add(tt.skew))
			wantErr(t, v.Verify(h, body, now), tt.want, f.secrets[0], sig)
		})
	}
}

// hostile is one malformed-request case for a scheme: set overrides headers
// of a correctly signed request ("" deletes the header).
type hostile struct {
	name string
	set  map[string]string
	want error
}

func runHostile(t *testing.T, f fixture, now time.Time, body []byte, tests []hostile) {
	t.Helper()
	v := mustNew(t, withSecrets(f.opts, f.secrets[0]))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, sig := f.sign(t, f.secrets[0], body, now)
			r := strings.NewReplacer("{sig-unpadded}", strings.TrimRight(sig, "="), "{SIG}", strings.ToUpper(sig), "{sig}", sig)
			for k, val := range tt.set {
				if val == del {
					h.Del(k)
				} else {
					h.Set(k, r.Replace(val))
				}
			}
			wantErr(t, v.Verify(h, body, now), tt.want, f.secrets[0], sig)
		})
	}
}

func fixtureNamed(t *testing.T, name string) fixture {
	t.Helper()
	for _, f := range fixtures() {
		if f.name == name {
			return f
		}
	}
	t.Fatalf("no fixture %q", name)
	return fixture{}
}

const del = "\x00delete"

var (
	testNow  = time.Unix(1700000000, 0)
	testBody = []byte(`{"id":"evt_hostile","type":"x"}`)
	zeros64  = strings.Repeat("0", 64)
	wrong64  = hex.EncodeToString(make([]byte, 32))
)

func TestVerify_Stripe(t *testing.T) {
	f := fixtureNamed(t, "stripe")
	runHostile(t, f, testNow, testBody, []hostile{
		{"Valid", nil, nil},
		{"Lower-case header name", map[string]string{"stripe-signature": "t=1700000000,v1={sig}"}, nil},
		{"Missing", map[string]string{"Stripe-Signature": del}, provider.ErrMissing},
		{"Empty", map[string]string{"Stripe-Signature": ""}, provider.ErrMissing},
		{"Truncated", map[string]string{"Stripe-Signature": "t=1700000000,v1=4f1cd7fe"}, provider.ErrMalformed},
		{"Truncated at t", map[string]string{"Stripe-Signature": "t=17000"}, provider.ErrMalformed},
		{"Non-hex", map[string]string{"Stripe-Signature": "t=1700000000,v1=" + strings.Repeat("zz", 32)}, provider.ErrMalformed},
		{"Odd length hex", map[string]string{"Stripe-Signature": "t=1700000000,v1=" + zeros64[:63]}, provider.ErrMalformed},
		{"Only v0", map[string]string{"Stripe-Signature": "t=1700000000,v0={sig}"}, provider.ErrMalformed},
		{"No timestamp", map[string]string{"Stripe-Signature": "v1={sig}"}, provider.ErrMalformed},
		{"Two timestamps", map[string]string{"Stripe-Signature": "t=1700000000,t=1700000000,v1={sig}"}, provider.ErrMalformed},
		{"Entry without equals", map[string]string{"Stripe-Signature": "t=1700000000,v1{sig}"}, provider.ErrMalformed},
		{"Non-numeric timestamp", map[string]string{"Stripe-Signature": "t=17e8,v1={sig}"}, provider.ErrMalformed},
		{"Negative timestamp", map[string]string{"Stripe-Signature": "t=-1700000000,v1={sig}"}, provider.ErrMalformed},
		{"Overflowing timestamp", map[string]string{"Stripe-Signature": "t=99999999999999999999,v1={sig}"}, provider.ErrMalformed},
		{"Far-future timestamp", map[string]string{"Stripe-Signature": "t=999999999999999999,v1={sig}"}, provider.ErrMismatch},
		{"Old timestamp", map[string]string{"Stripe-Signature": "t=1600000000,v1={sig}"}, provider.ErrTimestamp},
		{"Several v1 one valid", map[string]string{"Stripe-Signature": "t=1700000000,v1=xyz,v1=" + wrong64 + ",v0=" + zeros64 + ",v1={sig}"}, nil},
		{"Spaces around entries", map[string]string{"Stripe-Signature": "t=1700000000, v1={sig}"}, nil},
		{"Upper-case hex", map[string]string{"Stripe-Signature": "t=1700000000,v1={SIG}"}, nil},
		{"Several v1 none valid", map[string]string{"Stripe-Signature": "t=1700000000,v1=" + wrong64 + ",v1=" + zeros64}, provider.ErrMismatch},
		{"Unknown scheme only", map[string]string{"Stripe-Signature": "t=1700000000,v9={sig}"}, provider.ErrMalformed},
	})
}

func TestVerify_GitHub(t *testing.T) {
	f := fixtureNamed(t, "github")
	const hdr = "X-Hub-Signature-256"
	runHostile(t, f, testNow, testBody, []hostile{
		{"Valid", nil, nil},
		{"Missing", map[string]string{hdr: del}, provider.ErrMissing},
		{"Empty", map[string]string{hdr: ""}, provider.ErrMissing},
		{"No prefix", map[string]string{hdr: "{sig}"}, provider.ErrMalformed},
		{"Wrong prefix", map[string]string{hdr: "sha1={sig}"}, provider.ErrMalformed},
		{"Prefix only", map[string]string{hdr: "sha256="}, provider.ErrMalformed},
		{"Truncated", map[string]string{hdr: "sha256=" + zeros64[:40]}, provider.ErrMalformed},
		{"Non-hex", map[string]string{hdr: "sha256=" + strings.Repeat("g", 64)}, provider.ErrMalformed},
		{"Odd length hex", map[string]string{hdr: "sha256=" + zeros64[:63]}, provider.ErrMalformed},
		{"Too long", map[string]string{hdr: "sha256={sig}00"}, provider.ErrMalformed},
		{"Upper-case hex", map[string]string{hdr: "sha256={SIG}"}, provider.ErrMalformed},
		{"Wrong", map[string]string{hdr: "sha256=" + wrong64}, provider.ErrMismatch},
	})
}

func TestVerify_Shopify(t *testing.T) {
	f := fixtureNamed(t, "shopify")
	const hdr = "X-Shopify-Hmac-Sha256"
	runHostile(t, f, testNow, testBody, []hostile{
		{"Valid", nil, nil},
		{"Missing", map[string]string{hdr: del}, provider.ErrMissing},
		{"Empty", map[string]string{hdr: ""}, provider.ErrMissing},
		{"Truncated", map[string]string{hdr: "B23tXN681gZ0qIWN"}, provider.ErrMalformed},
		{"Not base64", map[string]string{hdr: strings.Repeat("!", 44)}, provider.ErrMalformed},
		{"Hex instead of base64", map[string]string{hdr: zeros64}, provider.ErrMalformed},
		{"Wrong", map[string]string{hdr: base64.StdEncoding.EncodeToString(make([]byte, 32))}, provider.ErrMismatch},
		{"Unpadded", map[string]string{hdr: "{sig-unpadded}"}, nil},
	})
}

func TestVerify_Slack(t *testing.T) {
	f := fixtureNamed(t, "slack")
	const sh, th = "X-Slack-Signature", "X-Slack-Request-Timestamp"
	runHostile(t, f, testNow, testBody, []hostile{
		{"Valid", nil, nil},
		{"Missing signature", map[string]string{sh: del}, provider.ErrMissing},
		{"Empty signature", map[string]string{sh: ""}, provider.ErrMissing},
		{"Missing timestamp", map[string]string{th: del}, provider.ErrMissing},
		{"Empty timestamp", map[string]string{th: ""}, provider.ErrMissing},
		{"Non-numeric timestamp", map[string]string{th: "now"}, provider.ErrMalformed},
		{"Fractional timestamp", map[string]string{th: "1700000000.5"}, provider.ErrMalformed},
		{"Overflowing timestamp", map[string]string{th: "99999999999999999999"}, provider.ErrMalformed},
		{"Stale timestamp", map[string]string{th: "1699999000"}, provider.ErrTimestamp},
		{"No version", map[string]string{sh: "{sig}"}, provider.ErrMalformed},
		{"Wrong version", map[string]string{sh: "v1={sig}"}, provider.ErrMalformed},
		{"Truncated", map[string]string{sh: "v0=" + zeros64[:10]}, provider.ErrMalformed},
		{"Non-hex", map[string]string{sh: "v0=" + strings.Repeat("x", 64)}, provider.ErrMalformed},
		{"Odd length hex", map[string]string{sh: "v0=" + zeros64[:63]}, provider.ErrMalformed},
		{"Upper-case hex", map[string]string{sh: "v0={SIG}"}, provider.ErrMalformed},
		{"Wrong", map[string]string{sh: "v0=" + wrong64}, provider.ErrMismatch},
		{"Timestamp changed", map[string]string{th: "1700000001"}, provider.ErrMismatch},
	})
}

func TestVerify_Standard(t *testing.T) {
	f := fixtureNamed(t, "standard")
	const ih, th, sh = "Webhook-Id", "Webhook-Timestamp", "Webhook-Signature"
	other := base64.StdEncoding.EncodeToString(make([]byte, 32))
	runHostile(t, f, testNow, testBody, []hostile{
		{"Valid", nil, nil},
		{"Missing signature", map[string]string{sh: del}, provider.ErrMissing},
		{"Empty signature", map[string]string{sh: ""}, provider.ErrMissing},
		{"Missing id", map[string]string{ih: del}, provider.ErrMissing},
		{"Missing timestamp", map[string]string{th: del}, provider.ErrMissing},
		{"Non-numeric timestamp", map[string]string{th: "17OOOOOOOO"}, provider.ErrMalformed},
		{"Overflowing timestamp", map[string]string{th: "99999999999999999999"}, provider.ErrMalformed},
		{"Stale timestamp", map[string]string{th: "1699990000"}, provider.ErrTimestamp},
		{"No version", map[string]string{sh: "{sig}"}, provider.ErrMalformed},
		{"Only v1a", map[string]string{sh: "v1a,{sig}"}, provider.ErrMalformed},
		{"Only v2", map[string]string{sh: "v2,{sig}"}, provider.ErrMalformed},
		{"Truncated", map[string]string{sh: "v1,g0hM9SsE+OTPJTGt"}, provider.ErrMalformed},
		{"Not base64", map[string]string{sh: "v1," + strings.Repeat("*", 44)}, provider.ErrMalformed},
		{"Several one valid", map[string]string{sh: "v1,bad v1a,{sig} v1," + other + " v1,{sig}"}, nil},
		{"Several none valid", map[string]string{sh: "v1," + other + " v1,bad"}, provider.ErrMismatch},
		{"Double spaces", map[string]string{sh: "  v1," + other + "   v1,{sig} "}, nil},
		{"Unpadded signature", map[string]string{sh: "v1,{sig-unpadded}"}, nil},
		{"Id changed", map[string]string{ih: "msg_other"}, provider.ErrMismatch},
		{"Timestamp changed", map[string]string{th: "1700000001"}, provider.ErrMismatch},
		{"Svix headers", map[string]string{ih: del, th: del, sh: del, "Svix-Id": "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", "Svix-Timestamp": "1700000000", "Svix-Signature": "v1,{sig}"}, nil},
		{"Svix headers wrong", map[string]string{ih: del, th: del, sh: del, "Svix-Id": "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", "Svix-Timestamp": "1700000000", "Svix-Signature": "v1," + other}, provider.ErrMismatch},
		{"Svix missing id", map[string]string{ih: del, th: del, sh: del, "Svix-Timestamp": "1700000000", "Svix-Signature": "v1,{sig}"}, provider.ErrMissing},
		// The event id is read from webhook-id first: beside a svix-signed
		// request, an unsigned webhook-id must not choose a new one.
		{"Svix signed, forged webhook-id", map[string]string{ih: "forged-1", th: del, sh: del, "Svix-Id": "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", "Svix-Timestamp": "1700000000", "Svix-Signature": "v1,{sig}"}, provider.ErrMalformed},
		{"Svix signed, same webhook-id", map[string]string{ih: "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", th: del, sh: del, "Svix-Id": "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", "Svix-Timestamp": "1700000000", "Svix-Signature": "v1,{sig}"}, nil},
	})
}

func TestVerify_StandardSecrets(t *testing.T) {
	body := []byte(`{"test": 2432232314}`)
	h := http.Header{}
	h.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set("webhook-timestamp", "1614265330")
	h.Set("webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	now := time.Unix(1614265330, 0)
	const padded = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(padded, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		secret string
	}{
		{"Padded", padded},
		{"Unpadded", "whsec_" + base64.RawStdEncoding.EncodeToString(key)},
		{"Without prefix", strings.TrimPrefix(padded, "whsec_")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := mustNew(t, provider.Options{Scheme: "standard", Secrets: []string{tt.secret}})
			wantErr(t, v.Verify(h, body, now), nil)
		})
	}
	// A key whose base64 needs padding, given without it.
	short := []byte("0123456789abcdef012345") // 22 bytes: padded form ends in "=="
	if enc := base64.StdEncoding.EncodeToString(short); !strings.HasSuffix(enc, "=") {
		t.Fatalf("test key encodes to %q, want padding", enc)
	}
	sig := base64.StdEncoding.EncodeToString(mac(sha256.New, short, "msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330.", string(body)))
	h2 := h.Clone()
	h2.Set("webhook-signature", "v1,"+sig)
	v := mustNew(t, provider.Options{Scheme: "standard", Secrets: []string{"whsec_" + base64.RawStdEncoding.EncodeToString(short)}})
	wantErr(t, v.Verify(h2, body, now), nil)
}

func TestVerify_GitLab(t *testing.T) {
	f := fixtureNamed(t, "gitlab")
	const hdr = "X-Gitlab-Token"
	runHostile(t, f, testNow, testBody, []hostile{
		{"Valid", nil, nil},
		{"Lower-case header name", map[string]string{"x-gitlab-token": f.secrets[0]}, nil},
		{"Missing", map[string]string{hdr: del}, provider.ErrMissing},
		{"Empty", map[string]string{hdr: ""}, provider.ErrMissing},
		{"Prefix of secret", map[string]string{hdr: f.secrets[0][:5]}, provider.ErrMismatch},
		{"Secret plus suffix", map[string]string{hdr: f.secrets[0] + "x"}, provider.ErrMismatch},
		{"Case changed", map[string]string{hdr: strings.ToUpper(f.secrets[0])}, provider.ErrMismatch},
		{"Very long", map[string]string{hdr: strings.Repeat(f.secrets[0], 100)}, provider.ErrMismatch},
	})
}

func TestVerify_Token(t *testing.T) {
	long := strings.Repeat("k", 300) // longer than the verifier's stack buffer
	v := mustNew(t, provider.Options{Scheme: "token", Header: "x-hook-token", Secrets: []string{"short", long}})
	for _, tt := range []struct {
		name, token string
		want        error
	}{
		{"Short secret", "short", nil},
		{"Long secret", long, nil},
		{"Long wrong", long + "k", provider.ErrMismatch},
		{"Missing", "", provider.ErrMissing},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.token != "" {
				h.Set("X-Hook-Token", tt.token)
			}
			wantErr(t, v.Verify(h, nil, testNow), tt.want, "short", long)
		})
	}
}

func TestVerify_HMAC(t *testing.T) {
	for _, name := range []string{"hmac", "hmac-sha512-base64", "hmac-sha1-hex"} {
		f := fixtureNamed(t, name)
		hdr := f.opts.Header
		t.Run(name, func(t *testing.T) {
			tests := []hostile{
				{"Valid", nil, nil},
				{"Missing", map[string]string{hdr: del}, provider.ErrMissing},
				{"Empty", map[string]string{hdr: ""}, provider.ErrMissing},
				{"Truncated", map[string]string{hdr: f.opts.Prefix + "abcd"}, provider.ErrMalformed},
				{"Garbage", map[string]string{hdr: f.opts.Prefix + strings.Repeat("?", 88)}, provider.ErrMalformed},
			}
			if f.opts.Prefix != "" {
				tests = append(tests,
					hostile{"Missing prefix", map[string]string{hdr: "{sig}"}, provider.ErrMalformed},
					hostile{"Other prefix", map[string]string{hdr: "md5={sig}"}, provider.ErrMalformed},
				)
			}
			if f.opts.Encoding != "base64" {
				tests = append(tests,
					hostile{"Upper-case hex", map[string]string{hdr: f.opts.Prefix + "{SIG}"}, nil},
					hostile{"Odd length hex", map[string]string{hdr: f.opts.Prefix + "{sig}0"}, provider.ErrMalformed},
				)
			}
			runHostile(t, f, testNow, testBody, tests)
		})
	}
}

func TestVerify_None(t *testing.T) {
	v := mustNew(t, provider.Options{Scheme: "none"})
	wantErr(t, v.Verify(http.Header{}, []byte("anything"), time.Time{}), nil)
}

func TestNew(t *testing.T) {
	const secret = "whsec_not*base64!"
	tests := []struct {
		name string
		opts provider.Options
		ok   bool
	}{
		{"Unknown scheme", provider.Options{Scheme: "paddle-classic", Secrets: []string{"s"}}, false},
		{"No scheme", provider.Options{Secrets: []string{"s"}}, false},
		{"Scheme is case-sensitive", provider.Options{Scheme: "Stripe", Secrets: []string{"s"}}, false},
		{"No secrets", provider.Options{Scheme: "github"}, false},
		{"Empty secret", provider.Options{Scheme: "github", Secrets: []string{"a", ""}}, false},
		{"Negative tolerance", provider.Options{Scheme: "slack", Secrets: []string{"s"}, Tolerance: -time.Second}, false},
		{"Hmac without header", provider.Options{Scheme: "hmac", Secrets: []string{"s"}}, false},
		{"Hmac bad header", provider.Options{Scheme: "hmac", Header: "X Sig", Secrets: []string{"s"}}, false},
		{"Token without header", provider.Options{Scheme: "token", Secrets: []string{"s"}}, false},
		{"Bad algorithm", provider.Options{Scheme: "hmac", Header: "X-Sig", Algorithm: "md5", Secrets: []string{"s"}}, false},
		{"Bad encoding", provider.Options{Scheme: "hmac", Header: "X-Sig", Encoding: "base32", Secrets: []string{"s"}}, false},
		{"Bad whsec base64", provider.Options{Scheme: "standard", Secrets: []string{secret}}, false},
		{"Empty whsec", provider.Options{Scheme: "standard", Secrets: []string{"whsec_"}}, false},
		{"None without secrets", provider.Options{Scheme: "none"}, true},
		{"Hmac defaults", provider.Options{Scheme: "hmac", Header: "X-Sig", Secrets: []string{"s"}}, true},
		{"Gitlab", provider.Options{Scheme: "gitlab", Secrets: []string{"s"}}, true},
		{"Stripe any secret", provider.Options{Scheme: "stripe", Secrets: []string{"not-whsec"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := provider.New(tt.opts)
			if got := err == nil; got != tt.ok {
				t.Fatalf("New: err=%v, want ok=%t", err, tt.ok)
			}
			if err == nil && v == nil {
				t.Fatal("New: got nil verifier and nil error")
			}
			if err != nil && strings.Contains(err.Error(), "base64!") {
				t.Fatalf("New: error %q contains the secret", err)
			}
		})
	}
}

// TestVerify_Concurrent checks that one verifier serves parallel requests
// (run with -race); the pooled hashes must not share state.
func TestVerify_Concurrent(t *testing.T) {
	for _, f := range fixtures() {
		t.Run(f.name, func(t *testing.T) {
			v := mustNew(t, withSecrets(f.opts, f.secrets[0], f.secrets[1]))
			errs := make(chan error, 8)
			for g := range 8 {
				go func() {
					var err error
					for i := range 200 {
						body := []byte(strings.Repeat("x", g*13+i))
						h, _ := f.sign(t, f.secrets[i%2], body, testNow)
						if err = v.Verify(h, body, testNow); err != nil {
							break
						}
						if f.signsBody {
							if err = v.Verify(h, append(body, 'y'), testNow); !errors.Is(err, provider.ErrMismatch) {
								err = errors.Join(errors.New("tampered body accepted"), err)
								break
							}
							err = nil
						}
					}
					errs <- err
				}()
			}
			for range 8 {
				if err := <-errs; err != nil {
					t.Errorf("got %v, want valid", err)
				}
			}
		})
	}
}
