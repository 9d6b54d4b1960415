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

func paddleHeader(secret, ts string, body []byte) string {
	return "ts=" + ts + ";h1=" + hex.EncodeToString(mac(sha256.New, []byte(secret), ts, ":", string(body)))
}

func TestPaddle_Verify(t *testing.T) {
	const old, cur = "pdl_ntfset_old_key", "pdl_ntfset_new_key"
	now := time.Unix(1710929255, 0)
	body := []byte(`{"event_id":"evt_1","event_type":"price.created"}`)
	v := mustNew(t, provider.Options{Scheme: "paddle", Secrets: []string{old, cur}})
	good := paddleHeader(cur, ts(now), body)
	sig := strings.TrimPrefix(good, "ts="+ts(now)+";h1=")
	for _, tt := range []struct {
		name, header string
		now          time.Time
		want         error
	}{
		{"Valid", good, now, nil},
		{"Old secret still configured", paddleHeader(old, ts(now), body), now, nil},
		{"Either h1 of a rotation", "ts=" + ts(now) + ";h1=" + strings.Repeat("0", 64) + ";h1=" + sig, now, nil},
		{"Spaces around entries", " ts=" + ts(now) + " ; h1=" + sig + " ", now, nil},
		{"Unknown keys are skipped", "ts=" + ts(now) + ";h2=x;h1=" + sig, now, nil},
		{"Five seconds old", good, now.Add(5 * time.Second), nil},
		{"Ahead of the clock", good, now.Add(-time.Hour), nil},
		{"Missing", "", now, provider.ErrMissing},
		{"No ts", "h1=" + sig, now, provider.ErrMalformed},
		{"Two ts", "ts=" + ts(now) + ";ts=" + ts(now) + ";h1=" + sig, now, provider.ErrMalformed},
		{"ts not a number", "ts=-1;h1=" + sig, now, provider.ErrMalformed},
		{"Entry without =", "ts=" + ts(now) + ";h1", now, provider.ErrMalformed},
		{"No h1", "ts=" + ts(now), now, provider.ErrMalformed},
		{"Upper-case hex", "ts=" + ts(now) + ";h1=" + strings.ToUpper(sig), now, provider.ErrMalformed},
		{"Short h1", "ts=" + ts(now) + ";h1=" + sig[:62], now, provider.ErrMalformed},
		{"Six seconds old", good, now.Add(6 * time.Second), provider.ErrTimestamp},
		{"Other secret", paddleHeader("pdl_ntfset_other", ts(now), body), now, provider.ErrMismatch},
		{"ts changed", "ts=" + ts(now.Add(time.Second)) + ";h1=" + sig, now, provider.ErrMismatch},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.header != "" {
				h.Set("Paddle-Signature", tt.header)
			}
			wantErr(t, v.Verify(h, body, tt.now), tt.want, old, cur, sig)
		})
	}
}

func FuzzPaddle(f *testing.F) {
	v, cases, signed, secrets := fuzzSetup(f, "paddle", provider.Options{Scheme: "paddle"})
	for _, c := range cases {
		f.Add(c.Headers["Paddle-Signature"], []byte(c.Body), c.NowUnix)
	}
	f.Add("ts=99999999999999999999;h1=", []byte("{}"), int64(0))
	f.Add(";;;ts=1;;h1=;=;", []byte("{}"), int64(1))
	f.Fuzz(func(t *testing.T, sig string, body []byte, now int64) {
		h := http.Header{}
		h.Set("Paddle-Signature", sig)
		checkFuzz(t, v.Verify(h, body, time.Unix(now, 0)), body, signed, secrets)
	})
}
