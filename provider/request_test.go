package provider_test

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"hookbox/provider"
)

// reqFixture is a scheme whose verifier is a RequestVerifier, with an
// independent signer.
type reqFixture struct {
	name string
	// request is a request to it before signing.
	request func() *provider.Request
	// sign sets the headers a sender holding secret would send.
	sign func(secret string, r *provider.Request, now time.Time)
	// tamper changes one signed part of a signed request, other than the
	// body (the URL, the query, a signed header).
	tamper func(r *provider.Request)
	// signsBody is unset for mercadopago, whose body is not signed.
	signsBody bool
}

func millis(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func reqFixtures() []reqFixture {
	return []reqFixture{
		{
			name: "twilio", signsBody: true,
			request: func() *provider.Request {
				return &provider.Request{Method: "POST", URL: "https://hooks.example.com/hooks/twilio?src=sms",
					Header: http.Header{}, Body: []byte("To=%2B15559870000&From=%2B15551230000&Body=hi+there")}
			},
			sign: func(secret string, r *provider.Request, _ time.Time) {
				// Parameters sorted by name: Body, From, To.
				s := r.URL + "Bodyhi there" + "From+15551230000" + "To+15559870000"
				r.Header.Set("X-Twilio-Signature", base64.StdEncoding.EncodeToString(mac(sha1.New, []byte(secret), s)))
			},
			tamper: func(r *provider.Request) { r.URL = strings.Replace(r.URL, "src=sms", "src=voice", 1) },
		},
		{
			name: "square", signsBody: true,
			request: func() *provider.Request {
				return &provider.Request{Method: "POST", URL: "https://hooks.example.com/hooks/square",
					Header: http.Header{}, Body: []byte(`{"event_id":"e1","type":"payment.updated"}`)}
			},
			sign: func(secret string, r *provider.Request, _ time.Time) {
				r.Header.Set("X-Square-Hmacsha256-Signature", base64.StdEncoding.EncodeToString(mac(sha256.New, []byte(secret), r.URL, string(r.Body))))
			},
			tamper: func(r *provider.Request) { r.URL += "/other" },
		},
		{
			name: "hubspot", signsBody: true,
			request: func() *provider.Request {
				return &provider.Request{Method: "POST", URL: "https://hooks.example.com/hooks/hubspot",
					Header: http.Header{}, Body: []byte(`[{"eventId":1,"subscriptionType":"contact.creation"}]`)}
			},
			sign: func(secret string, r *provider.Request, now time.Time) {
				r.Header.Set("X-HubSpot-Request-Timestamp", millis(now))
				r.Header.Set("X-HubSpot-Signature-v3", base64.StdEncoding.EncodeToString(
					mac(sha256.New, []byte(secret), r.Method, r.URL, string(r.Body), millis(now))))
			},
			tamper: func(r *provider.Request) { r.Method = "PUT" },
		},
		{
			name: "mercadopago",
			request: func() *provider.Request {
				return &provider.Request{Method: "POST", URL: "https://hooks.example.com/hooks/mp?data.id=123&type=payment",
					Header: http.Header{"X-Request-Id": {"r-1"}}, Body: []byte(`{"action":"payment.updated"}`)}
			},
			sign: func(secret string, r *provider.Request, now time.Time) {
				manifest := "id:123;request-id:" + r.Header.Get("X-Request-Id") + ";ts:" + millis(now) + ";"
				r.Header.Set("X-Signature", "ts="+millis(now)+",v1="+hex.EncodeToString(mac(sha256.New, []byte(secret), manifest)))
			},
			tamper: func(r *provider.Request) { r.Header.Set("X-Request-Id", "r-2") },
		},
	}
}

func reqFixtureNamed(t *testing.T, name string) reqFixture {
	t.Helper()
	for _, f := range reqFixtures() {
		if f.name == name {
			return f
		}
	}
	t.Fatalf("no request fixture %q", name)
	return reqFixture{}
}

func verifyRequest(t *testing.T, v provider.Verifier, r *provider.Request, now time.Time) error {
	t.Helper()
	rv, ok := v.(provider.RequestVerifier)
	if !ok {
		t.Fatalf("%T is no RequestVerifier", v)
	}
	return rv.VerifyRequest(r, now)
}

func TestVerifyRequest_RotationAndTampering(t *testing.T) {
	secrets := [3]string{"old-secret-1234", "new-secret-5678", "other-secret-9999"}
	for _, f := range reqFixtures() {
		t.Run(f.name, func(t *testing.T) {
			v := mustNew(t, provider.Options{Scheme: f.name, Secrets: secrets[:2]})
			for _, s := range secrets[:2] {
				r := f.request()
				f.sign(s, r, testNow)
				wantErr(t, verifyRequest(t, v, r, testNow), nil, secrets[:]...)
			}
			r := f.request()
			f.sign(secrets[2], r, testNow)
			wantErr(t, verifyRequest(t, v, r, testNow), provider.ErrMismatch, secrets[:]...)

			r = f.request()
			f.sign(secrets[0], r, testNow)
			f.tamper(r)
			wantErr(t, verifyRequest(t, v, r, testNow), provider.ErrMismatch, secrets[:]...)

			r = f.request()
			f.sign(secrets[0], r, testNow)
			r.Body = append(r.Body, 'x')
			err := verifyRequest(t, v, r, testNow)
			if f.signsBody {
				wantErr(t, err, provider.ErrMismatch, secrets[:]...)
			} else {
				wantErr(t, err, nil) // Mercado Pago signs no byte of the body
			}

			// Verify, without the URL, refuses everything.
			r = f.request()
			f.sign(secrets[0], r, testNow)
			wantErr(t, v.Verify(r.Header, r.Body, testNow), provider.ErrMissing, secrets[:]...)
		})
	}
}

// reqHostile is a malformed-request case: edit changes a correctly
// signed request.
type reqHostile struct {
	name string
	edit func(r *provider.Request)
	want error
}

func runReqHostile(t *testing.T, name string, now time.Time, tests []reqHostile) {
	t.Helper()
	f := reqFixtureNamed(t, name)
	const secret = "hostile-secret-0123"
	v := mustNew(t, provider.Options{Scheme: name, Secrets: []string{secret}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.request()
			f.sign(secret, r, now)
			if tt.edit != nil {
				tt.edit(r)
			}
			wantErr(t, verifyRequest(t, v, r, now), tt.want, secret)
		})
	}
}

func TestVerifyRequest_Twilio(t *testing.T) {
	sign := func(r *provider.Request, signed string) {
		r.Header.Set("X-Twilio-Signature", base64.StdEncoding.EncodeToString(mac(sha1.New, []byte("hostile-secret-0123"), signed)))
	}
	runReqHostile(t, "twilio", testNow, []reqHostile{
		{"Valid", nil, nil},
		{"Missing", func(r *provider.Request) { r.Header.Del("X-Twilio-Signature") }, provider.ErrMissing},
		{"Not base64", func(r *provider.Request) { r.Header.Set("X-Twilio-Signature", strings.Repeat("*", 28)) }, provider.ErrMalformed},
		{"Hex instead of base64", func(r *provider.Request) { r.Header.Set("X-Twilio-Signature", strings.Repeat("0", 40)) }, provider.ErrMalformed},
		{"Relative URL", func(r *provider.Request) { r.URL = "/hooks/twilio?src=sms" }, provider.ErrMalformed},
		{"Other scheme", func(r *provider.Request) { r.URL = "ftp://hooks.example.com/hooks/twilio?src=sms" }, provider.ErrMalformed},
		{"Fragment", func(r *provider.Request) { r.URL += "#rc=3" }, provider.ErrMalformed},
		{"Body not form-encoded", func(r *provider.Request) { r.Body = []byte("a=%zz") }, provider.ErrMalformed},
		{"Parameters reordered", func(r *provider.Request) { r.Body = []byte("Body=hi+there&To=%2B15559870000&From=%2B15551230000") }, nil},
		{"Explicit default port", func(r *provider.Request) { r.URL = "https://hooks.example.com:443/hooks/twilio?src=sms" }, nil},
		{"Other port, signed without it", func(r *provider.Request) { r.URL = "https://hooks.example.com:8443/hooks/twilio?src=sms" }, nil},
		{"Signed with the default port", func(r *provider.Request) {
			sign(r, "https://hooks.example.com:443/hooks/twilio?src=sms"+"Bodyhi there"+"From+15551230000"+"To+15559870000")
		}, nil},
		{"Signed with a port the URL lacks", func(r *provider.Request) {
			sign(r, "https://hooks.example.com:8443/hooks/twilio?src=sms"+"Bodyhi there"+"From+15551230000"+"To+15559870000")
		}, provider.ErrMismatch},
		{"IPv6 host with a port", func(r *provider.Request) {
			r.URL = "http://[::1]:8080/hooks/twilio"
			sign(r, "http://[::1]/hooks/twilio"+"Bodyhi there"+"From+15551230000"+"To+15559870000")
		}, nil},
		{"Repeated values: distinct, sorted", func(r *provider.Request) {
			r.Body = []byte("Digits=5&Digits=1&Digits=1")
			sign(r, r.URL+"Digits1Digits5")
		}, nil},
		{"JSON body hashed in the URL", func(r *provider.Request) {
			r.Body = []byte(`{"CallSid":"CA1"}`)
			sum := sha256.Sum256(r.Body)
			r.URL += "&bodySHA256=" + hex.EncodeToString(sum[:])
			sign(r, r.URL)
		}, nil},
		{"JSON body not the one hashed", func(r *provider.Request) {
			sum := sha256.Sum256([]byte(`{"CallSid":"CA1"}`))
			r.URL += "&bodySHA256=" + hex.EncodeToString(sum[:])
			sign(r, r.URL)
			r.Body = []byte(`{"CallSid":"CA2"}`)
		}, provider.ErrMismatch},
		{"Upper-case bodySHA256", func(r *provider.Request) {
			r.Body = []byte(`{"CallSid":"CA1"}`)
			sum := sha256.Sum256(r.Body)
			r.URL += "&bodySHA256=" + strings.ToUpper(hex.EncodeToString(sum[:]))
			sign(r, r.URL)
		}, provider.ErrMismatch},
	})
}

func TestVerifyRequest_MercadoPago(t *testing.T) {
	const secret = "hostile-secret-0123"
	sign := func(r *provider.Request, ts, manifest string) {
		r.Header.Set("X-Signature", "ts="+ts+",v1="+hex.EncodeToString(mac(sha256.New, []byte(secret), manifest)))
	}
	ms := millis(testNow)
	runReqHostile(t, "mercadopago", testNow, []reqHostile{
		{"Valid", nil, nil},
		{"Missing", func(r *provider.Request) { r.Header.Del("X-Signature") }, provider.ErrMissing},
		{"Blank", func(r *provider.Request) { r.Header.Set("X-Signature", "  ") }, provider.ErrMissing},
		{"Garbage", func(r *provider.Request) { r.Header.Set("X-Signature", "this-is-garbage") }, provider.ErrMalformed},
		{"No ts", func(r *provider.Request) { r.Header.Set("X-Signature", "v1="+zeros64) }, provider.ErrMalformed},
		{"No v1", func(r *provider.Request) { r.Header.Set("X-Signature", "ts="+ms) }, provider.ErrMalformed},
		{"Only v2", func(r *provider.Request) { r.Header.Set("X-Signature", "ts="+ms+",v2="+zeros64) }, provider.ErrMalformed},
		{"Non-numeric ts", func(r *provider.Request) { r.Header.Set("X-Signature", "ts=17e11,v1="+zeros64) }, provider.ErrMalformed},
		{"Short v1", func(r *provider.Request) { r.Header.Set("X-Signature", "ts="+ms+",v1=abcd") }, provider.ErrMalformed},
		{"Wrong v1", func(r *provider.Request) { r.Header.Set("X-Signature", "ts="+ms+",v1="+wrong64) }, provider.ErrMismatch},
		{"Keys in upper case", func(r *provider.Request) {
			r.Header.Set("X-Signature", strings.NewReplacer("ts=", "TS=", "v1=", "V1=").Replace(r.Header.Get("X-Signature")))
		}, nil},
		{"ts in seconds", func(r *provider.Request) {
			sign(r, ts(testNow), "id:123;request-id:r-1;ts:"+ts(testNow)+";")
		}, nil},
		{"Five days old", func(r *provider.Request) {
			old := millis(testNow.Add(-5 * 24 * time.Hour))
			sign(r, old, "id:123;request-id:r-1;ts:"+old+";")
		}, nil},
		{"Over five days old", func(r *provider.Request) {
			old := millis(testNow.Add(-5*24*time.Hour - time.Second))
			sign(r, old, "id:123;request-id:r-1;ts:"+old+";")
		}, provider.ErrTimestamp},
		{"Over five days ahead", func(r *provider.Request) {
			ahead := millis(testNow.Add(5*24*time.Hour + time.Second))
			sign(r, ahead, "id:123;request-id:r-1;ts:"+ahead+";")
		}, provider.ErrTimestamp},
		{"No request id: left out of the manifest", func(r *provider.Request) {
			r.Header.Del("X-Request-Id")
			sign(r, ms, "id:123;ts:"+ms+";")
		}, nil},
		{"Request id trimmed", func(r *provider.Request) { r.Header.Set("X-Request-Id", " r-1 ") }, nil},
		{"No data.id: left out of the manifest", func(r *provider.Request) {
			r.URL = "https://hooks.example.com/hooks/mp?type=payment"
			sign(r, ms, "request-id:r-1;ts:"+ms+";")
		}, nil},
		{"data.id in another case", func(r *provider.Request) { r.URL = strings.Replace(r.URL, "data.id=123", "data.id=ABC", 1) }, provider.ErrMismatch},
		{"data.id only in the body", func(r *provider.Request) { r.URL = "https://hooks.example.com/hooks/mp?type=payment" }, provider.ErrMismatch},
	})
}

func TestVerifyRequest_HubSpot(t *testing.T) {
	const secret = "hostile-secret-0123"
	runReqHostile(t, "hubspot", testNow, []reqHostile{
		{"Valid", nil, nil},
		{"Missing signature", func(r *provider.Request) { r.Header.Del("X-HubSpot-Signature-v3") }, provider.ErrMissing},
		{"Missing timestamp", func(r *provider.Request) { r.Header.Del("X-HubSpot-Request-Timestamp") }, provider.ErrMissing},
		{"Timestamp in seconds", func(r *provider.Request) { r.Header.Set("X-HubSpot-Request-Timestamp", "17e8") }, provider.ErrMalformed},
		{"Not base64", func(r *provider.Request) { r.Header.Set("X-HubSpot-Signature-v3", zeros64) }, provider.ErrMalformed},
		{"Five minutes old", func(r *provider.Request) {
			at := testNow.Add(-5 * time.Minute)
			r.Header.Set("X-HubSpot-Request-Timestamp", millis(at))
			r.Header.Set("X-HubSpot-Signature-v3", base64.StdEncoding.EncodeToString(mac(sha256.New, []byte(secret), r.Method, r.URL, string(r.Body), millis(at))))
		}, nil},
		{"Over five minutes old", func(r *provider.Request) {
			at := testNow.Add(-5*time.Minute - time.Millisecond)
			r.Header.Set("X-HubSpot-Request-Timestamp", millis(at))
			r.Header.Set("X-HubSpot-Signature-v3", base64.StdEncoding.EncodeToString(mac(sha256.New, []byte(secret), r.Method, r.URL, string(r.Body), millis(at))))
		}, provider.ErrTimestamp},
		{"A day ahead", func(r *provider.Request) {
			at := testNow.Add(24 * time.Hour)
			r.Header.Set("X-HubSpot-Request-Timestamp", millis(at))
			r.Header.Set("X-HubSpot-Signature-v3", base64.StdEncoding.EncodeToString(mac(sha256.New, []byte(secret), r.Method, r.URL, string(r.Body), millis(at))))
		}, nil},
		{"Timestamp changed", func(r *provider.Request) {
			r.Header.Set("X-HubSpot-Request-Timestamp", millis(testNow.Add(-time.Second)))
		}, provider.ErrMismatch},
		{"URI escapes decoded, either case", func(r *provider.Request) {
			signed := "https://hooks.example.com/hooks/hubspot?a=b:c,d@e"
			r.URL = "https://hooks.example.com/hooks/hubspot?a=b%3ac%2Cd%40e"
			r.Header.Set("X-HubSpot-Signature-v3", base64.StdEncoding.EncodeToString(mac(sha256.New, []byte(secret), r.Method, signed, string(r.Body), millis(testNow))))
		}, nil},
		{"Other escapes kept", func(r *provider.Request) {
			signed := "https://hooks.example.com/hooks/hubspot?a=b c"
			r.URL = "https://hooks.example.com/hooks/hubspot?a=b%20c"
			r.Header.Set("X-HubSpot-Signature-v3", base64.StdEncoding.EncodeToString(mac(sha256.New, []byte(secret), r.Method, signed, string(r.Body), millis(testNow))))
		}, provider.ErrMismatch},
	})
}

func TestVerifyRequest_Square(t *testing.T) {
	runReqHostile(t, "square", testNow, []reqHostile{
		{"Valid", nil, nil},
		{"Missing", func(r *provider.Request) { r.Header.Del("X-Square-Hmacsha256-Signature") }, provider.ErrMissing},
		{"Truncated", func(r *provider.Request) { r.Header.Set("X-Square-Hmacsha256-Signature", "GF4YkrJgGBDZ9NIY") }, provider.ErrMalformed},
		{"Query added", func(r *provider.Request) { r.URL += "?x=1" }, provider.ErrMismatch},
		{"Only the legacy SHA-1 header", func(r *provider.Request) {
			r.Header.Set("X-Square-Signature", r.Header.Get("X-Square-Hmacsha256-Signature"))
			r.Header.Del("X-Square-Hmacsha256-Signature")
		}, provider.ErrMissing},
	})
}

func TestZoomHandshake(t *testing.T) {
	body := `{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1700000000456,"event":"endpoint.url_validation"}`
	o := provider.Options{Secrets: []string{"old-token", "new-token"}}
	for _, signer := range []string{"old-token", "new-token"} {
		f := fixtureNamed(t, "zoom")
		h, _ := f.sign(t, signer, []byte(body), testNow)
		reply, ok := handshake(t, "zoom", o, h, body)
		want := `{"encryptedToken":"` + hex.EncodeToString(mac(sha256.New, []byte(signer), "qgg8vlvZRS6UYooatFL8Aw")) + `","plainToken":"qgg8vlvZRS6UYooatFL8Aw"}` + "\n"
		if !ok || string(reply.Body) != want || reply.ContentType != "application/json" {
			t.Fatalf("signed with %s: reply %q %q, %t; want %q keyed with the signer's token", signer, reply.ContentType, reply.Body, ok, want)
		}
	}
	for _, body := range []string{`{"event":"meeting.started","payload":{"plainToken":"x"}}`, `{"event":"endpoint.url_validation","payload":{}}`,
		`{"event":"endpoint.url_validation","payload":{"plainToken":7}}`, `[]`, `event=endpoint.url_validation`} {
		if reply, ok := handshake(t, "zoom", o, nil, body); ok {
			t.Errorf("%s answered %q, want no handshake", body, reply.Body)
		}
	}
}

func TestTwitchHandshake(t *testing.T) {
	verification := http.Header{"Twitch-Eventsub-Message-Type": {"webhook_callback_verification"}}
	reply, ok := handshake(t, "twitch", provider.Options{Secrets: []string{"s"}}, verification, `{"challenge":"pogchamp-kappa","subscription":{}}`)
	if !ok || string(reply.Body) != "pogchamp-kappa" || reply.ContentType != "text/plain; charset=utf-8" {
		t.Fatalf("reply %q %q, %t; want the raw challenge as text/plain", reply.ContentType, reply.Body, ok)
	}
	for _, tt := range []struct {
		typ, body string
	}{
		{"notification", `{"challenge":"c","event":{}}`},
		{"revocation", `{"challenge":"c","subscription":{}}`},
		{"webhook_callback_verification", `{"subscription":{}}`},
		{"webhook_callback_verification", `{"challenge":1}`},
		{"webhook_callback_verification", `challenge=c`},
	} {
		h := http.Header{"Twitch-Eventsub-Message-Type": {tt.typ}}
		if reply, ok := handshake(t, "twitch", provider.Options{Secrets: []string{"s"}}, h, tt.body); ok {
			t.Errorf("%s %s answered %q, want no handshake", tt.typ, tt.body, reply.Body)
		}
	}
}

func TestDiscordHandshake(t *testing.T) {
	o := provider.Options{Secrets: []string{discordPublic[0]}}
	reply, ok := handshake(t, "discord", o, nil, `{"id":"1","token":"t","type":1,"version":1}`)
	if !ok || string(reply.Body) != `{"type":1}`+"\n" || reply.ContentType != "application/json" {
		t.Fatalf("PING: reply %q %q, %t; want {\"type\":1}", reply.ContentType, reply.Body, ok)
	}
	for _, body := range []string{`{"id":"2","type":2}`, `{"type":"1"}`, `{"type":1.0}`, `{"version":1,"type":1,"event":{"type":"APPLICATION_AUTHORIZED"}}`, `[1]`} {
		if reply, ok := handshake(t, "discord", o, nil, body); ok {
			t.Errorf("%s answered %q, want no handshake", body, reply.Body)
		}
	}
}

func TestDiscordSecrets(t *testing.T) {
	p, _ := provider.Lookup("discord")
	for _, s := range []string{"", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", discordPublic[0][:62], discordPublic[0] + "00", strings.Repeat("g", 64)} {
		if err := p.CheckSecret(s); err == nil {
			t.Errorf("CheckSecret(%q) accepted it, want an error", s)
		} else if s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("CheckSecret error %q quotes the secret", err)
		}
		if s != "" {
			if _, err := provider.New(provider.Options{Scheme: "discord", Secrets: []string{s}}); err == nil {
				t.Errorf("New accepted discord secret %q", s)
			}
		}
	}
	if err := p.CheckSecret(strings.ToUpper(discordPublic[0])); err != nil {
		t.Errorf("upper-case hex key: %v", err)
	}
}

func TestVerify_ShopifyEvents(t *testing.T) {
	f := fixtureNamed(t, "shopify")
	v := mustNew(t, withSecrets(f.opts, f.secrets[0]))
	h, sig := f.sign(t, f.secrets[0], testBody, testNow)
	events := http.Header{}
	events.Set("Shopify-Hmac-Sha256", sig)
	wantErr(t, v.Verify(events, testBody, testNow), nil)
	h.Set("Shopify-Hmac-Sha256", base64.StdEncoding.EncodeToString(make([]byte, 32)))
	// With the events header present, the X- one does not stand in for it.
	wantErr(t, v.Verify(h, testBody, testNow), provider.ErrMismatch, sig)
}
