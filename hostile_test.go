package main_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"hookbox/dedupe"
)

// Secrets of the hostile-input config. Every answer is checked for them.
const (
	hxStripeSecret   = "whsec_hostile_stripe_5d1f0c2a"
	hxGitHubSecret   = "gh_hostile_7a9e3b41"
	hxStandardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	hxSlackSecret    = "slack_hostile_2c8d6e90"
	hxHMACSecret     = "hmac_hostile_41f7aa05"
)

var hxSecrets = []string{hxStripeSecret, hxGitHubSecret, hxStandardSecret, hxSlackSecret, hxHMACSecret}

// hostileConfig has one source per signing style; hmac has a small
// per-source body limit.
var hostileConfig = fmt.Sprintf(`
[[source]]
name = "stripe"
verify = "stripe"
secret = %q

[[source]]
name = "github"
verify = "github"
secret = %q

[[source]]
name = "standard"
verify = "standard"
secret = %q

[[source]]
name = "slack"
verify = "slack"
secret = %q

[[source]]
name = "hmac"
verify = "hmac"
secret = %q
header = "X-Signature"
prefix = "sha256="
event_id = "json:id"
max_body = "1KiB"
`, hxStripeSecret, hxGitHubSecret, hxStandardSecret, hxSlackSecret, hxHMACSecret)

// hxStripeV1 is the v1 value Stripe sends for timestamp t.
func hxStripeV1(t string, body []byte) string {
	return hex.EncodeToString(mac(sha256.New, []byte(hxStripeSecret), t, ".", string(body)))
}

// hxGitHubSig is the X-Hub-Signature-256 value GitHub sends.
func hxGitHubSig(body []byte) string {
	return githubSig(hxGitHubSecret, body)
}

// hxStandardSig is the base64 signature Standard Webhooks sends after "v1,".
func hxStandardSig(tb testing.TB, id, ts string, body []byte) string {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(hxStandardSecret, "whsec_"))
	if err != nil {
		tb.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(mac(sha256.New, key, id, ".", ts, ".", string(body)))
}

// hxSlackSig is the X-Slack-Signature value Slack sends.
func hxSlackSig(ts string, body []byte) string {
	return "v0=" + hex.EncodeToString(mac(sha256.New, []byte(hxSlackSecret), "v0:", ts, ":", string(body)))
}

// hxHMACSig is the X-Signature value of the generic hmac source.
func hxHMACSig(body []byte) string {
	return githubSig(hxHMACSecret, body) // the same scheme: HMAC-SHA256, hex, "sha256="
}

// hxReq is an HTTP/1.1 request written by hand, so that it can carry what
// net/http's client refuses to send: lying lengths, odd paths, empty or
// repeated headers.
type hxReq struct {
	method        string // default POST
	target        string // the request-target, sent as is
	headers       [][2]string
	body          []byte
	chunked       bool
	contentLength string // overrides the true length when set
	keepAlive     bool   // omit "Connection: close"
}

func (r hxReq) wire(host string) []byte {
	var b bytes.Buffer
	method := r.method
	if method == "" {
		method = http.MethodPost
	}
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, r.target, host)
	for _, h := range r.headers {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	switch {
	case r.chunked:
		b.WriteString("Transfer-Encoding: chunked\r\n")
	case r.contentLength != "":
		fmt.Fprintf(&b, "Content-Length: %s\r\n", r.contentLength)
	default:
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(r.body))
	}
	if !r.keepAlive {
		b.WriteString("Connection: close\r\n")
	}
	b.WriteString("\r\n")
	if !r.chunked {
		b.Write(r.body)
		return b.Bytes()
	}
	for rest := r.body; len(rest) > 0; {
		n := min(len(rest), 32<<10)
		fmt.Fprintf(&b, "%x\r\n", n)
		b.Write(rest[:n])
		b.WriteString("\r\n")
		rest = rest[n:]
	}
	b.WriteString("0\r\n\r\n")
	return b.Bytes()
}

// hxAnswer is one response read off a raw connection.
type hxAnswer struct {
	status int
	body   string
}

// hxRoundTrip writes raw to a fresh connection while reading every answer
// the server gives (at most 4) until it closes the connection. The write
// runs on its own, because the server may answer (413, 431) and close
// before it has read everything.
func hxRoundTrip(tb testing.TB, addr string, raw []byte) []hxAnswer {
	tb.Helper()
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		tb.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { _, _ = conn.Write(raw) }()
	br := bufio.NewReader(conn)
	var out []hxAnswer
	for len(out) < 4 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			break
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		out = append(out, hxAnswer{resp.StatusCode, string(b)})
	}
	if len(out) == 0 {
		tb.Fatalf("no answer from %s", addr)
	}
	return out
}

// hxCount is the number of stored events.
func hxCount(tb testing.TB, tm *testMain) int {
	tb.Helper()
	list, err := tm.DB.ListEvents(context.Background(), dedupe.Filter{})
	if err != nil {
		tb.Fatalf("list events: %v", err)
	}
	return len(list)
}

// hxHealthy fails unless /healthz still answers 200.
func hxHealthy(tb testing.TB, tm *testMain) {
	tb.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(tm.URL + "/healthz")
	if err != nil {
		tb.Fatalf("healthz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("healthz status=%d, want 200", resp.StatusCode)
	}
}

// hostileCase is one request and what hookbox must answer.
type hostileCase struct {
	name   string
	req    hxReq
	want   int      // the first answer's status
	stored int      // events the request adds (0 or 1)
	leaks  []string // correct signatures for the request: never in an answer
}

// hostileCases builds the table at now. Ids are unique per run so that
// every accepted case stores one new event.
func hostileCases(tb testing.TB, now time.Time) []hostileCase {
	ts := strconv.FormatInt(now.Unix(), 10)
	uniq := strconv.FormatInt(now.UnixNano(), 36)
	var cases []hostileCase
	add := func(c hostileCase) { cases = append(cases, c) }

	// Stripe: Stripe-Signature "t=…,v1=…", id and type in the JSON body.
	stripeBody := func(id string) []byte {
		return []byte(fmt.Sprintf(`{"id":%q,"type":"invoice.paid"}`, id))
	}
	stripe := func(name string, body []byte, sig string, want, stored int) {
		var h [][2]string
		if sig != "\x00" {
			h = append(h, [2]string{"Stripe-Signature", sig})
		}
		add(hostileCase{name: "stripe/" + name, req: hxReq{target: "/hooks/stripe", headers: h, body: body},
			want: want, stored: stored, leaks: []string{hxStripeV1(ts, body)}})
	}
	sb := stripeBody("evt_" + uniq)
	good := hxStripeV1(ts, sb)
	const absent = "\x00"
	stripe("signature missing", sb, absent, 401, 0)
	stripe("signature empty", sb, "", 401, 0)
	stripe("signature truncated", sb, "t="+ts+",v1="+good[:32], 401, 0)
	stripe("signature not hex", sb, "t="+ts+",v1="+strings.Repeat("zz", 32), 401, 0)
	stripe("signature odd length", sb, "t="+ts+",v1="+good[:63], 401, 0)
	stripe("wrong scheme only (v0)", sb, "t="+ts+",v0="+good, 401, 0)
	stripe("no timestamp", sb, "v1="+good, 401, 0)
	stripe("garbage header", sb, ",,,=,t=,v1=,", 401, 0)
	stripe("signature for another body", sb, "t="+ts+",v1="+hxStripeV1(ts, stripeBody("evt_other")), 401, 0)
	for _, tc := range []struct{ name, t string }{
		{"timestamp old (1h)", strconv.FormatInt(now.Add(-time.Hour).Unix(), 10)},
		{"timestamp not numeric", "abc"},
		{"timestamp overflowing int64", "99999999999999999999"},
		{"timestamp negative", "-1"},
		{"timestamp empty", ""},
	} {
		stripe(tc.name, sb, "t="+tc.t+",v1="+hxStripeV1(tc.t, sb), 401, 0)
	}
	// Stripe rejects only timestamps older than the tolerance, as stripe-go
	// does (signature/stripe.go); a future one is accepted.
	fb := stripeBody("evt_" + uniq + "_future")
	future := strconv.FormatInt(now.Add(time.Hour).Unix(), 10)
	stripe("timestamp future (1h), accepted as stripe-go does", fb, "t="+future+",v1="+hxStripeV1(future, fb), 200, 1)
	stripe("several v1, one valid", sb, "t="+ts+",v1="+strings.Repeat("0", 64)+",v1="+good+",v0=abc", 200, 1)
	signed := func(name string, body []byte, want, stored int) {
		stripe(name, body, "t="+ts+",v1="+hxStripeV1(ts, body), want, stored)
	}
	signed("id missing", []byte(`{"type":"invoice.paid"}`), 400, 0)
	signed("id empty", []byte(`{"id":"","type":"invoice.paid"}`), 400, 0)
	signed("id null", []byte(`{"id":null}`), 400, 0)
	signed("id an object", []byte(`{"id":{"nested":"evt_1"}}`), 400, 0)
	signed("id an array", []byte(`{"id":["evt_1"]}`), 400, 0)
	signed("id huge (300 bytes)", stripeBody("evt_"+strings.Repeat("x", 296)), 400, 0)
	signed("id with CR/LF", stripeBody("evt_"+uniq+"\r\nX-Injected: 1"), 400, 0)
	signed("id with NUL", stripeBody("evt_"+uniq+"\x00"), 400, 0)
	signed("id a number", []byte(fmt.Sprintf(`{"id":%d,"type":"n"}`, now.UnixNano())), 200, 1)
	signed("id at 256 bytes", stripeBody("evt_"+uniq+strings.Repeat("y", 256-4-len(uniq))), 200, 1)
	signed("deep JSON (100k nested arrays)", []byte(strings.Repeat("[", 100000)+strings.Repeat("]", 100000)), 400, 0)
	signed("deep JSON (100k nested objects)", []byte(strings.Repeat(`{"id":`, 100000)+`"x"`+strings.Repeat("}", 100000)), 400, 0)
	signed("invalid JSON (truncated)", []byte(`{"id":"evt_`+uniq+`t"`), 400, 0)
	signed("invalid JSON (trailing data)", []byte(`{"id":"evt_`+uniq+`a"} {"id":"evt_`+uniq+`b"}`), 400, 0)
	signed("not JSON", []byte(`id=evt_`+uniq), 400, 0)
	signed("empty body", nil, 400, 0)

	big := bytes.Repeat([]byte("a"), 1<<20+1)
	add(hostileCase{name: "stripe/body over 1MiB (Content-Length)", want: 413,
		req: hxReq{target: "/hooks/stripe", body: big, headers: [][2]string{{"Stripe-Signature", "t=" + ts + ",v1=" + hxStripeV1(ts, big)}}}})
	add(hostileCase{name: "stripe/body over 1MiB (chunked)", want: 413,
		req: hxReq{target: "/hooks/stripe", body: big, chunked: true, headers: [][2]string{{"Stripe-Signature", "t=" + ts + ",v1=" + hxStripeV1(ts, big)}}}})
	add(hostileCase{name: "stripe/Content-Length claims over 1MiB", want: 413,
		req: hxReq{target: "/hooks/stripe", body: sb, contentLength: strconv.Itoa(1<<20 + 1), headers: [][2]string{{"Stripe-Signature", "t=" + ts + ",v1=" + good}}}})
	// The length covers only the JSON; the signature covers all the bytes
	// sent, and the rest is read as a second request (400 from net/http).
	lie := append(stripeBody("evt_"+uniq+"_lie"), "\nGARBAGE\r\n\r\n"...)
	add(hostileCase{name: "stripe/Content-Length smaller than the body", want: 401,
		req: hxReq{target: "/hooks/stripe", body: lie, keepAlive: true, contentLength: strconv.Itoa(bytes.IndexByte(lie, '\n')),
			headers: [][2]string{{"Stripe-Signature", "t=" + ts + ",v1=" + hxStripeV1(ts, lie)}}},
		leaks: []string{hxStripeV1(ts, lie)}})
	add(hostileCase{name: "stripe/headers over the limit", want: 431,
		req: hxReq{target: "/hooks/stripe", body: sb, headers: [][2]string{{"Stripe-Signature", "t=" + ts + ",v1=" + good}, {"X-Padding", strings.Repeat("p", 100<<10)}}}})
	add(hostileCase{name: "stripe/GET", want: 405, req: hxReq{method: "GET", target: "/hooks/stripe"}})

	// Valid stripe requests on paths that only look like the route.
	for _, p := range []string{"/hooks/../x", "/hooks/%2e%2e", "/hooks/%2E%2E/stripe", "/hooks/..%2fstripe", "/hooks/a/b",
		"/hooks/", "/hooks/stripe/", "/hooks/Stripe", "/hooks/stripe%00", "/hooks//stripe", "//hooks/stripe", "/hooks"} {
		add(hostileCase{name: "path " + p, want: 404, req: hxReq{target: p, body: sb, headers: [][2]string{{"Stripe-Signature", "t=" + ts + ",v1=" + good}}}})
	}

	// GitHub: X-Hub-Signature-256 "sha256=<hex>", id in X-GitHub-Delivery.
	gb := []byte(`{"action":"opened","n":"` + uniq + `"}`)
	ggood := hxGitHubSig(gb)
	github := func(name string, body []byte, sig, delivery string, want, stored int) {
		h := [][2]string{{"X-GitHub-Event", "issues"}}
		if delivery != absent {
			h = append(h, [2]string{"X-GitHub-Delivery", delivery})
		}
		if sig != absent {
			h = append(h, [2]string{"X-Hub-Signature-256", sig})
		}
		add(hostileCase{name: "github/" + name, req: hxReq{target: "/hooks/github", headers: h, body: body},
			want: want, stored: stored, leaks: []string{hxGitHubSig(body)}})
	}
	gid := "gh-" + uniq
	github("signature missing", gb, absent, gid, 401, 0)
	github("signature empty", gb, "", gid, 401, 0)
	github("signature truncated", gb, ggood[:27], gid, 401, 0)
	github("signature not hex", gb, "sha256="+strings.Repeat("g", 64), gid, 401, 0)
	github("signature odd length", gb, ggood[:len(ggood)-1], gid, 401, 0)
	github("signature upper-case hex", gb, "sha256="+strings.ToUpper(ggood[7:]), gid, 401, 0)
	github("no sha256= prefix", gb, ggood[7:], gid, 401, 0)
	github("wrong scheme only (sha1)", gb, "sha1="+hex.EncodeToString(mac(sha1.New, []byte(hxGitHubSecret), string(gb))), gid, 401, 0)
	github("id missing", gb, ggood, absent, 400, 0)
	github("id huge (300 bytes)", gb, ggood, strings.Repeat("d", 300), 400, 0)
	github("valid", gb, ggood, gid, 200, 1)

	// Standard Webhooks: webhook-id/-timestamp/-signature, all signed.
	stb := []byte(`{"type":"order.created","n":"` + uniq + `"}`)
	standard := func(name, id, t, sig string, body []byte, want, stored int) {
		var h [][2]string
		for _, kv := range [][2]string{{"webhook-id", id}, {"webhook-timestamp", t}, {"webhook-signature", sig}} {
			if kv[1] != absent {
				h = append(h, kv)
			}
		}
		sid, st := id, t
		if sid == absent {
			sid = ""
		}
		if st == absent {
			st = ""
		}
		add(hostileCase{name: "standard/" + name, req: hxReq{target: "/hooks/standard", headers: h, body: body},
			want: want, stored: stored, leaks: []string{hxStandardSig(tb, sid, st, body)}})
	}
	sid := "msg_" + uniq
	sgood := hxStandardSig(tb, sid, ts, stb)
	standard("signature missing", sid, ts, absent, stb, 401, 0)
	standard("signature empty", sid, ts, "", stb, 401, 0)
	standard("timestamp missing", sid, absent, "v1,"+sgood, stb, 401, 0)
	standard("id missing", absent, ts, "v1,"+hxStandardSig(tb, "", ts, stb), stb, 401, 0)
	standard("signature truncated", sid, ts, "v1,"+sgood[:20], stb, 401, 0)
	standard("signature not base64", sid, ts, "v1,!!!!"+sgood[4:], stb, 401, 0)
	standard("wrong scheme only (v1a)", sid, ts, "v1a,"+sgood, stb, 401, 0)
	standard("no version", sid, ts, sgood, stb, 401, 0)
	for _, tc := range []struct{ name, t string }{
		{"timestamp old (1h)", strconv.FormatInt(now.Add(-time.Hour).Unix(), 10)},
		{"timestamp future (1h)", strconv.FormatInt(now.Add(time.Hour).Unix(), 10)},
		{"timestamp not numeric", "soon"},
		{"timestamp overflowing int64", "99999999999999999999"},
	} {
		standard(tc.name, sid, tc.t, "v1,"+hxStandardSig(tb, sid, tc.t, stb), stb, 401, 0)
	}
	huge := "msg_" + strings.Repeat("h", 300)
	standard("id huge (300 bytes)", huge, ts, "v1,"+hxStandardSig(tb, huge, ts, stb), stb, 400, 0)
	standard("several, one valid", sid, ts, "v1,"+sgood[:40]+"AAAA= v1,"+sgood, stb, 200, 1)

	// Slack: X-Slack-Signature "v0=<hex>" over "v0:ts:body", id in JSON.
	slb := []byte(`{"type":"event_callback","event_id":"Ev` + uniq + `","event":{"type":"app_mention"}}`)
	slack := func(name, t, sig string, body []byte, want, stored int) {
		var h [][2]string
		for _, kv := range [][2]string{{"X-Slack-Request-Timestamp", t}, {"X-Slack-Signature", sig}} {
			if kv[1] != absent {
				h = append(h, kv)
			}
		}
		add(hostileCase{name: "slack/" + name, req: hxReq{target: "/hooks/slack", headers: h, body: body},
			want: want, stored: stored, leaks: []string{hxSlackSig(ts, body)}})
	}
	slgood := hxSlackSig(ts, slb)
	slack("signature missing", ts, absent, slb, 401, 0)
	slack("timestamp missing", absent, slgood, slb, 401, 0)
	slack("signature not hex", ts, "v0="+strings.Repeat("q", 64), slb, 401, 0)
	slack("signature odd length", ts, slgood[:len(slgood)-1], slb, 401, 0)
	slack("wrong scheme only (v1)", ts, "v1="+slgood[3:], slb, 401, 0)
	for _, tc := range []struct{ name, t string }{
		{"timestamp old (1h)", strconv.FormatInt(now.Add(-time.Hour).Unix(), 10)},
		{"timestamp future (1h)", strconv.FormatInt(now.Add(time.Hour).Unix(), 10)},
		{"timestamp not numeric", "0x10"},
		{"timestamp overflowing int64", "99999999999999999999"},
	} {
		slack(tc.name, tc.t, hxSlackSig(tc.t, slb), slb, 401, 0)
	}
	noID := []byte(`{"type":"event_callback","event":{"type":"app_mention"}}`)
	slack("id missing", ts, hxSlackSig(ts, noID), noID, 400, 0)
	slack("valid", ts, slgood, slb, 200, 1)

	// Generic hmac: X-Signature "sha256=<hex>", 1 KiB body limit.
	hb := []byte(`{"id":"ord_` + uniq + `"}`)
	hgood := hxHMACSig(hb)
	hmacCase := func(name, sig string, body []byte, want, stored int) {
		var h [][2]string
		if sig != absent {
			h = append(h, [2]string{"X-Signature", sig})
		}
		add(hostileCase{name: "hmac/" + name, req: hxReq{target: "/hooks/hmac", headers: h, body: body},
			want: want, stored: stored, leaks: []string{hxHMACSig(body)}})
	}
	hmacCase("signature missing", absent, hb, 401, 0)
	hmacCase("signature empty", "", hb, 401, 0)
	hmacCase("wrong prefix", "sha512="+hgood[7:], hb, 401, 0)
	hmacCase("signature not hex", "sha256="+strings.Repeat("x", 64), hb, 401, 0)
	hmacCase("signature odd length", hgood[:len(hgood)-1], hb, 401, 0)
	hmacCase("base64 instead of hex", "sha256="+base64.StdEncoding.EncodeToString(mac(sha256.New, []byte(hxHMACSecret), string(hb))), hb, 401, 0)
	over := []byte(`{"id":"ord_big","pad":"` + strings.Repeat("p", 2048) + `"}`)
	hmacCase("body over the source's 1KiB", hxHMACSig(over), over, 413, 0)
	hmacCase("valid", hgood, hb, 200, 1)
	return cases
}

func TestHostile_Requests(t *testing.T) {
	tm := MustRunMain(t, hostileConfig, "")
	addr := tm.Addr()
	stored := 0
	for _, c := range hostileCases(t, time.Now()) {
		t.Run(c.name, func(t *testing.T) {
			answers := hxRoundTrip(t, addr, c.req.wire(addr))
			for _, a := range answers {
				t.Logf("%d %s", a.status, strings.TrimSpace(a.body))
			}
			if got := answers[0].status; got != c.want {
				t.Errorf("status=%d, want %d (body %q)", got, c.want, answers[0].body)
			}
			for _, a := range answers {
				if a.status >= 500 {
					t.Errorf("answer %d %q: a 5xx", a.status, a.body)
				}
				for _, leak := range append(c.leaks, hxSecrets...) {
					if leak != "" && strings.Contains(a.body, leak) {
						t.Errorf("answer %q contains a secret or the correct signature %q", a.body, leak)
					}
				}
			}
			for _, a := range answers[1:] {
				if a.status < 400 {
					t.Errorf("trailing bytes answered %d %q, want a 4xx", a.status, a.body)
				}
			}
			stored += c.stored
			if got := hxCount(t, tm); got != stored {
				t.Errorf("stored events=%d, want %d", got, stored)
				stored = got
			}
			hxHealthy(t, tm)
		})
	}
	if got := tm.Receiver.Counters.Failed.Load(); got != 0 {
		t.Errorf("receiver counted %d failures (5xx), want 0", got)
	}
}

// TestHostile_ConflictingRedelivery sends a validly signed event twice
// under one id with different bodies: the second is a duplicate, the first
// body is kept, and the event counts one conflict.
func TestHostile_ConflictingRedelivery(t *testing.T) {
	tm := MustRunMain(t, hostileConfig, "")
	addr := tm.Addr()
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	first := []byte(`{"id":"evt_conflict","type":"invoice.paid","amount":100}`)
	second := []byte(`{"id":"evt_conflict","type":"invoice.paid","amount":999999}`)
	for i, body := range [][]byte{first, second} {
		req := hxReq{target: "/hooks/stripe", body: body, headers: [][2]string{{"Stripe-Signature", "t=" + ts + ",v1=" + hxStripeV1(ts, body)}}}
		a := hxRoundTrip(t, addr, req.wire(addr))[0]
		want := []string{`"accepted"`, `"duplicate"`}[i]
		if a.status != 200 || !strings.Contains(a.body, want) {
			t.Fatalf("send %d: %d %q, want 200 with %s", i+1, a.status, a.body, want)
		}
	}
	list, err := tm.DB.ListEvents(context.Background(), dedupe.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("stored events=%d, want 1", len(list))
	}
	if e := list[0]; e.Redeliveries != 1 || e.Conflicts != 1 {
		t.Errorf("redeliveries=%d conflicts=%d, want 1 and 1", e.Redeliveries, e.Conflicts)
	}
	e, err := tm.DB.GetEvent(context.Background(), list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(e.Body, first) {
		t.Errorf("stored body %q, want the first %q", e.Body, first)
	}
	if got := tm.Receiver.Counters.Conflicts.Load(); got != 1 {
		t.Errorf("conflict counter=%d, want 1", got)
	}
}
