package provider_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"hookbox/provider"
)

// sendgridKeyPair is a signing key and the verification key SendGrid's
// settings would show for it.
func sendgridKeyPair(tb testing.TB, curve elliptic.Curve) (*ecdsa.PrivateKey, string) {
	tb.Helper()
	k, err := ecdsa.GenerateKey(curve, rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		tb.Fatal(err)
	}
	return k, base64.StdEncoding.EncodeToString(der)
}

func sendgridSign(tb testing.TB, k *ecdsa.PrivateKey, ts string, body []byte) http.Header {
	tb.Helper()
	d := sha256.Sum256(append([]byte(ts), body...))
	sig, err := ecdsa.SignASN1(rand.Reader, k, d[:])
	if err != nil {
		tb.Fatal(err)
	}
	h := http.Header{}
	h.Set("X-Twilio-Email-Event-Webhook-Signature", base64.StdEncoding.EncodeToString(sig))
	h.Set("X-Twilio-Email-Event-Webhook-Timestamp", ts)
	return h
}

func TestVerify_SendGrid(t *testing.T) {
	oldKey, oldPub := sendgridKeyPair(t, elliptic.P256())
	newKey, newPub := sendgridKeyPair(t, elliptic.P256())
	otherKey, _ := sendgridKeyPair(t, elliptic.P256())
	v := mustNew(t, provider.Options{Scheme: "sendgrid", Secrets: []string{oldPub, newPub}})
	now := time.Unix(1700000000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	body := []byte(`[{"email":"a@example.com","event":"delivered","sg_event_id":"e1","timestamp":1700000000}]` + "\r\n")

	wantErr(t, v.Verify(sendgridSign(t, newKey, ts, body), body, now), nil)
	wantErr(t, v.Verify(sendgridSign(t, oldKey, ts, body), body, now), nil)
	wantErr(t, v.Verify(sendgridSign(t, otherKey, ts, body), body, now), provider.ErrMismatch)
	wantErr(t, v.Verify(sendgridSign(t, newKey, ts, body), body[:len(body)-1], now), provider.ErrMismatch)
	wantErr(t, v.Verify(sendgridSign(t, newKey, ts, body), body, now.Add(47*time.Hour)), nil)
	wantErr(t, v.Verify(sendgridSign(t, newKey, ts, body), body, now.Add(49*time.Hour)), provider.ErrTimestamp)
	wantErr(t, v.Verify(sendgridSign(t, newKey, ts, body), body, now.Add(-49*time.Hour)), provider.ErrTimestamp)

	h := sendgridSign(t, newKey, ts, body)
	for _, tt := range []struct {
		name, header, value string
		want                error
	}{
		{"No signature", "X-Twilio-Email-Event-Webhook-Signature", "", provider.ErrMissing},
		{"No timestamp", "X-Twilio-Email-Event-Webhook-Timestamp", "", provider.ErrMissing},
		{"Timestamp in milliseconds' form", "X-Twilio-Email-Event-Webhook-Timestamp", ts + ".000", provider.ErrMalformed},
		{"Signature not base64", "X-Twilio-Email-Event-Webhook-Signature", "not base64!", provider.ErrMalformed},
		{"Signature too long", "X-Twilio-Email-Event-Webhook-Signature", strings.Repeat("A", 200), provider.ErrMalformed},
		{"Signature not DER", "X-Twilio-Email-Event-Webhook-Signature", base64.StdEncoding.EncodeToString(make([]byte, 64)), provider.ErrMismatch},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hh := h.Clone()
			hh.Set(tt.header, tt.value)
			if tt.value == "" {
				hh.Del(tt.header)
			}
			wantErr(t, v.Verify(hh, body, now), tt.want)
		})
	}
}

func TestNew_SendGridKeys(t *testing.T) {
	_, p256 := sendgridKeyPair(t, elliptic.P256())
	_, p384 := sendgridKeyPair(t, elliptic.P384())
	rsaKey, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	rsaDER, _ := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	der, _ := base64.StdEncoding.DecodeString(p256)
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	sg, _ := provider.Lookup("sendgrid")
	for _, tt := range []struct {
		name, key string
		ok        bool
	}{
		{"Base64, as SendGrid shows it", p256, true},
		{"With spaces around", "  " + p256 + "\n", true},
		{"PEM", pemKey, true},
		{"The SDKs' key", sg.SecretExample, true},
		{"P-384", p384, false},
		{"RSA", base64.StdEncoding.EncodeToString(rsaDER), false},
		{"Not base64", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", false},
		{"Base64 of garbage", base64.StdEncoding.EncodeToString([]byte("not a key")), false},
		{"PEM without its end", strings.Split(pemKey, "-----END")[0], false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := provider.New(provider.Options{Scheme: "sendgrid", Secrets: []string{tt.key}})
			if (err == nil) != tt.ok || (sg.CheckSecret(tt.key) == nil) != tt.ok {
				t.Fatalf("New: %v, CheckSecret: %v; want ok=%t", err, sg.CheckSecret(tt.key), tt.ok)
			}
			if err != nil && strings.Contains(err.Error(), strings.TrimSpace(tt.key)) {
				t.Fatalf("error %q quotes the key", err)
			}
		})
	}
}

// The timestamp and the body are signed with no separator between them:
// a digit moved from the end of the timestamp to the start of the body
// keeps the signature valid, and makes the timestamp a tenth of itself,
// decades old, which the tolerance refuses.
func TestVerify_SendGridShiftedDigit(t *testing.T) {
	k, pub := sendgridKeyPair(t, elliptic.P256())
	v := mustNew(t, provider.Options{Scheme: "sendgrid", Secrets: []string{pub}})
	now := time.Unix(1700000000, 0)
	body := []byte(`[{"event":"delivered"}]`)
	h := sendgridSign(t, k, "1700000000", body)
	h.Set("X-Twilio-Email-Event-Webhook-Timestamp", "170000000")
	wantErr(t, v.Verify(h, append([]byte("0"), body...), now), provider.ErrTimestamp)
}

// FuzzSendGrid: a request is verified only for a timestamp and body whose
// concatenation a seed signed (the signature covers both, with nothing
// between them).
func FuzzSendGrid(f *testing.F) {
	cases := loadVectorFile(f, "sendgrid.json")
	var keys []string
	signed := map[string]bool{} // timestamp and body, concatenated
	for _, c := range cases {
		if !slices.Contains(keys, c.Secret) {
			keys = append(keys, c.Secret)
		}
		ts := c.Headers["X-Twilio-Email-Event-Webhook-Timestamp"]
		if c.ExpectValid {
			signed[ts+c.Body] = true
		}
		f.Add(c.Headers["X-Twilio-Email-Event-Webhook-Signature"], ts, []byte(c.Body), c.NowUnix)
	}
	v := mustNew(f, provider.Options{Scheme: "sendgrid", Secrets: keys})
	f.Fuzz(func(t *testing.T, sig, ts string, body []byte, now int64) {
		h := http.Header{}
		h.Set("X-Twilio-Email-Event-Webhook-Signature", sig)
		h.Set("X-Twilio-Email-Event-Webhook-Timestamp", ts)
		err := v.Verify(h, body, time.Unix(now, 0))
		checkErr(t, err)
		if err == nil && !signed[h.Get("X-Twilio-Email-Event-Webhook-Timestamp")+string(body)] {
			t.Fatalf("timestamp %q and body %q verified, which no seed signed", ts, body)
		}
	})
}
