package provider_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"hookbox/provider"
)

func TestLinear_Verify(t *testing.T) {
	const old, cur = "lin_old_secret", "lin_new_secret"
	now := time.UnixMilli(1677611643500)
	v := mustNew(t, provider.Options{Scheme: "linear", Secrets: []string{old, cur}})
	at := func(ms int64) []byte {
		return []byte(`{"action":"create","type":"Issue","webhookTimestamp":` + strconv.FormatInt(ms, 10) + `}`)
	}
	fresh := at(now.UnixMilli())
	sign := func(secret string, body []byte) string {
		return hex.EncodeToString(mac(sha256.New, []byte(secret), string(body)))
	}
	for _, tt := range []struct {
		name, sig string
		body      []byte
		want      error
	}{
		{"Valid", sign(cur, fresh), fresh, nil},
		{"Old secret still configured", sign(old, fresh), fresh, nil},
		{"A minute old", sign(cur, at(now.UnixMilli()-60000)), at(now.UnixMilli() - 60000), nil},
		{"A minute ahead", sign(cur, at(now.UnixMilli()+60000)), at(now.UnixMilli() + 60000), nil},
		{"Spaces around the number", sign(cur, []byte(`{"webhookTimestamp": 1677611643500 }`)), []byte(`{"webhookTimestamp": 1677611643500 }`), nil},
		{"Missing", "", fresh, provider.ErrMissing},
		{"Upper-case hex", strings.ToUpper(sign(cur, fresh)), fresh, provider.ErrMalformed},
		{"Other secret", sign("other", fresh), fresh, provider.ErrMismatch},
		{"Stale", sign(cur, at(now.UnixMilli()-60001)), at(now.UnixMilli() - 60001), provider.ErrTimestamp},
		{"Ahead", sign(cur, at(now.UnixMilli()+60001)), at(now.UnixMilli() + 60001), provider.ErrTimestamp},
		{"No timestamp", sign(cur, []byte(`{"type":"Issue"}`)), []byte(`{"type":"Issue"}`), provider.ErrMissing},
		{"Another key's case", sign(cur, []byte(`{"WebhookTimestamp":1677611643500}`)), []byte(`{"WebhookTimestamp":1677611643500}`), provider.ErrMissing},
		{"Timestamp as a string", sign(cur, []byte(`{"webhookTimestamp":"1677611643500"}`)), []byte(`{"webhookTimestamp":"1677611643500"}`), provider.ErrMalformed},
		{"Fractional timestamp", sign(cur, []byte(`{"webhookTimestamp":1677611643500.5}`)), []byte(`{"webhookTimestamp":1677611643500.5}`), provider.ErrMalformed},
		{"Signed body not JSON", sign(cur, []byte(`webhookTimestamp=1`)), []byte(`webhookTimestamp=1`), provider.ErrMalformed},
		{"Last repeated key wins", sign(cur, []byte(`{"webhookTimestamp":1677611643500,"webhookTimestamp":1}`)), []byte(`{"webhookTimestamp":1677611643500,"webhookTimestamp":1}`), provider.ErrTimestamp},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.sig != "" {
				h.Set("Linear-Signature", tt.sig)
			}
			// An unsigned Linear-Timestamp header never counts.
			h.Set("Linear-Timestamp", strconv.FormatInt(now.UnixMilli(), 10))
			wantErr(t, v.Verify(h, tt.body, now), tt.want, old, cur, tt.sig)
		})
	}
}

func FuzzLinear(f *testing.F) {
	v, cases, signed, secrets := fuzzSetup(f, "linear", provider.Options{Scheme: "linear"})
	for _, c := range cases {
		f.Add(c.Headers["Linear-Signature"], []byte(c.Body), c.NowUnix*1000)
	}
	f.Add("", []byte(`{"webhookTimestamp":-1}`), int64(0))
	f.Fuzz(func(t *testing.T, sig string, body []byte, nowMS int64) {
		h := http.Header{}
		h.Set("Linear-Signature", sig)
		checkFuzz(t, v.Verify(h, body, time.UnixMilli(nowMS)), body, signed, secrets)
	})
}
