package provider_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"hookbox/location"
	"hookbox/provider"
)

func mailgunBody(key, ts, token string, eventData string) string {
	sig := hex.EncodeToString(mac(sha256.New, []byte(key), ts, token))
	return `{"signature":{"timestamp":"` + ts + `","token":"` + token + `","signature":"` + sig + `"},"event-data":` + eventData + `}`
}

func TestVerify_Mailgun(t *testing.T) {
	const ts, token = "1700000000", "a8ce0edb2dd8301dee6c2405235584e45aa91d1e9f979f3de0"
	now := time.Unix(1700000000, 0)
	v := mustNew(t, provider.Options{Scheme: "mailgun", Secrets: []string{"key-old", "key-new"}})
	ed := `{"event":"opened","id":"ev1"}`
	sig := hex.EncodeToString(mac(sha256.New, []byte("key-new"), ts, token))
	tests := []struct {
		name string
		body string
		now  time.Time
		want error
	}{
		{"Current key", mailgunBody("key-new", ts, token, ed), now, nil},
		{"Older key", mailgunBody("key-old", ts, token, ed), now, nil},
		{"Unknown key", mailgunBody("key-other", ts, token, ed), now, provider.ErrMismatch},
		{"Timestamp as a number", `{"signature":{"timestamp":` + ts + `,"token":"` + token + `","signature":"` + sig + `"}}`, now, nil},
		{"Signature first, fields in any order", `{"signature":{"signature":"` + sig + `","token":"` + token + `","timestamp":"` + ts + `"},"event-data":` + ed + `}`, now, nil},
		{"23 h old", mailgunBody("key-new", ts, token, ed), now.Add(23 * time.Hour), nil},
		{"25 h old", mailgunBody("key-new", ts, token, ed), now.Add(25 * time.Hour), provider.ErrTimestamp},
		{"25 h ahead", mailgunBody("key-new", ts, token, ed), now.Add(-25 * time.Hour), provider.ErrTimestamp},
		{"No token", `{"signature":{"timestamp":"` + ts + `","signature":"` + sig + `"}}`, now, provider.ErrMissing},
		{"Empty token", `{"signature":{"timestamp":"` + ts + `","token":"","signature":"` + sig + `"}}`, now, provider.ErrMalformed},
		{"Token not a string", `{"signature":{"timestamp":"` + ts + `","token":{},"signature":"` + sig + `"}}`, now, provider.ErrMalformed},
		{"Signature not an object", `{"signature":"` + sig + `"}`, now, provider.ErrMalformed},
		{"Null signature", `{"signature":null}`, now, provider.ErrMissing},
		{"Negative timestamp", `{"signature":{"timestamp":"-1","token":"` + token + `","signature":"` + sig + `"}}`, now, provider.ErrMalformed},
		{"Long token", mailgunBody("key-new", ts, strings.Repeat("t", 300), ed), now, provider.ErrMalformed},
		{"Data after the object", mailgunBody("key-new", ts, token, ed) + `{}`, now, provider.ErrMalformed},
		{"Not JSON", "timestamp=" + ts + "&token=" + token + "&signature=" + sig, now, provider.ErrMalformed},
		{"Empty body", "", now, provider.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantErr(t, v.Verify(http.Header{}, []byte(tt.body), tt.now), tt.want, "key-old", "key-new", sig)
		})
	}
}

// The token the signature was checked with is the event id the receiver
// reads: a second, differently cased signature key (encoding/json would
// match it to a struct field) or a repeated one cannot make them differ.
func TestVerify_MailgunTokenIsTheID(t *testing.T) {
	const ts = "1700000000"
	v := mustNew(t, provider.Options{Scheme: "mailgun", Secrets: []string{"key"}})
	good := mailgunBody("key", ts, "signed-token", `{}`)
	sigObj := good[len(`{"signature":`):strings.Index(good, `,"event-data"`)]
	verified := 0
	for _, body := range []string{
		`{"signature":` + sigObj + `,"Signature":{"timestamp":"` + ts + `","token":"fresh","signature":"00"}}`,
		`{"Signature":` + sigObj + `,"signature":{"timestamp":"` + ts + `","token":"fresh","signature":"00"}}`,
		`{"signature":{"timestamp":"` + ts + `","token":"fresh","signature":"00"},"signature":` + sigObj + `}`,
		`{"signature":` + sigObj + `,"signature":{"timestamp":"` + ts + `","token":"fresh","signature":"00"}}`,
	} {
		err := v.Verify(http.Header{}, []byte(body), time.Unix(1700000000, 0))
		if err != nil {
			continue
		}
		verified++
		if id, idErr := mailgunID(t, body); idErr != nil || id != "signed-token" {
			t.Errorf("body %s verified, and its event id is %q (%v), not the signed token", body, id, idErr)
		}
	}
	if verified != 2 {
		t.Errorf("%d bodies verified, want 2 (those whose last \"signature\" is the signed one)", verified)
	}
}

func mailgunID(tb testing.TB, body string) (string, error) {
	tb.Helper()
	p, _ := provider.Lookup("mailgun")
	loc, err := location.Parse(p.EventID, location.ID)
	if err != nil {
		tb.Fatal(err)
	}
	return loc.Find(&location.Request{Body: []byte(body)})
}

// Timestamp and token are signed with no separator: a digit moved between
// them keeps the signature and changes the token, the event id. The
// timestamp becomes a tenth or ten times itself, which the tolerance,
// checked both ways, refuses.
func TestVerify_MailgunShiftedDigit(t *testing.T) {
	v := mustNew(t, provider.Options{Scheme: "mailgun", Secrets: []string{"key"}})
	now := time.Unix(1700000000, 0)
	sig := hex.EncodeToString(mac(sha256.New, []byte("key"), "1700000000", "0b5477"))
	for _, f := range [][2]string{{"170000000", "00b5477"}, {"17000000000", "b5477"}} {
		body := `{"signature":{"timestamp":"` + f[0] + `","token":"` + f[1] + `","signature":"` + sig + `"}}`
		wantErr(t, v.Verify(http.Header{}, []byte(body), now), provider.ErrTimestamp)
	}
}

// FuzzMailgun: a body is verified only if it carries a timestamp and token
// whose concatenation a seed signed, and the event id the receiver reads
// from it is that token.
func FuzzMailgun(f *testing.F) {
	cases := loadVectorFile(f, "mailgun.json")
	var secrets []string
	signed := map[string]bool{} // timestamp and token, concatenated
	for _, c := range cases {
		if !slices.Contains(secrets, c.Secret) {
			secrets = append(secrets, c.Secret)
		}
		if c.ExpectValid {
			var doc struct {
				Signature struct{ Timestamp, Token string }
			}
			if err := json.Unmarshal([]byte(c.Body), &doc); err != nil {
				f.Fatal(err)
			}
			signed[doc.Signature.Timestamp+doc.Signature.Token] = true
		}
		f.Add([]byte(c.Body), c.NowUnix)
	}
	v := mustNew(f, provider.Options{Scheme: "mailgun", Secrets: secrets})
	f.Fuzz(func(t *testing.T, body []byte, now int64) {
		err := v.Verify(http.Header{}, body, time.Unix(now, 0))
		checkErr(t, err, secrets...)
		if err != nil {
			return
		}
		id, idErr := mailgunID(t, string(body))
		if idErr != nil {
			t.Fatalf("body %q verified, and no event id is found in it: %v", body, idErr)
		}
		var doc map[string]map[string]json.RawMessage
		_ = json.Unmarshal(body, &doc)
		var ts string
		if raw := doc["signature"]["timestamp"]; len(raw) > 0 && raw[0] == '"' {
			_ = json.Unmarshal(raw, &ts)
		} else {
			ts = string(raw)
		}
		if !signed[ts+id] {
			t.Fatalf("body %q verified, with timestamp %q and token (its event id) %q, which no seed signed", body, ts, id)
		}
	})
}
