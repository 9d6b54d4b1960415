package provider_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"hookbox/provider"
)

func calendlySig(secret, ts string, body []byte) string {
	return hex.EncodeToString(mac(sha256.New, []byte(secret), ts, ".", string(body)))
}

func TestCalendly_Verify(t *testing.T) {
	const old, cur = "calendly_old_key", "calendly_new_key"
	now := time.Unix(1710929255, 0)
	body := []byte(`{"event":"invitee.created","payload":{"uri":"https://api.calendly.com/x"}}`)
	v := mustNew(t, provider.Options{Scheme: "calendly", Secrets: []string{old, cur}})
	sig := calendlySig(cur, ts(now), body)
	good := "t=" + ts(now) + ",v1=" + sig
	for _, tt := range []struct {
		name, header string
		now          time.Time
		want         error
	}{
		{"Valid", good, now, nil},
		{"Old key still configured", "t=" + ts(now) + ",v1=" + calendlySig(old, ts(now), body), now, nil},
		{"Any v1", "t=" + ts(now) + ",v1=" + strings.Repeat("a", 64) + ",v1=" + sig, now, nil},
		{"Other keys skipped", "t=" + ts(now) + ",v0=zz,v1=" + sig, now, nil},
		{"Three minutes old", good, now.Add(3 * time.Minute), nil},
		{"Ahead of the clock", good, now.Add(-time.Hour), nil},
		{"Missing", "", now, provider.ErrMissing},
		{"No t", "v1=" + sig, now, provider.ErrMalformed},
		{"Two t", "t=1,t=2,v1=" + sig, now, provider.ErrMalformed},
		{"t not a number", "t=1e9,v1=" + sig, now, provider.ErrMalformed},
		{"Entry without =", good + ",v1", now, provider.ErrMalformed},
		{"No v1", "t=" + ts(now), now, provider.ErrMalformed},
		{"Upper-case hex", "t=" + ts(now) + ",v1=" + strings.ToUpper(sig), now, provider.ErrMalformed},
		{"Stale", good, now.Add(3*time.Minute + time.Second), provider.ErrTimestamp},
		{"Other key", "t=" + ts(now) + ",v1=" + calendlySig("other", ts(now), body), now, provider.ErrMismatch},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.header != "" {
				h.Set("Calendly-Webhook-Signature", tt.header)
			}
			wantErr(t, v.Verify(h, body, tt.now), tt.want, old, cur, sig)
		})
	}
}

func FuzzCalendly(f *testing.F) {
	v, cases, signed, secrets := fuzzSetup(f, "calendly", provider.Options{Scheme: "calendly"})
	for _, c := range cases {
		f.Add(c.Headers["Calendly-Webhook-Signature"], []byte(c.Body), c.NowUnix)
	}
	f.Add(",,t=1,,v1=,=,", []byte("{}"), int64(1))
	f.Fuzz(func(t *testing.T, sig string, body []byte, now int64) {
		h := http.Header{}
		h.Set("Calendly-Webhook-Signature", sig)
		checkFuzz(t, v.Verify(h, body, time.Unix(now, 0)), body, signed, secrets)
	})
}
