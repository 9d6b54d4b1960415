package provider_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"hookbox/provider"
)

// FuzzSignBodyMember: a body that is one JSON object, signed by a scheme
// that writes a member of it (linear's webhookTimestamp, mailgun's
// signature object), verifies, and keeps every other member as it was; any
// other body is refused with an error, never a panic.
func FuzzSignBodyMember(f *testing.F) {
	for _, p := range provider.All() {
		if p.Name == "linear" || p.Name == "mailgun" {
			f.Add(p.Samples[0].Body())
		}
	}
	for _, s := range []string{`{}`, `{"webhookTimestamp":1}`, `{"signature":null}`, `{"signature":{"token":1}}`, `[]`, `{"a":1} x`, `{"a":"\u00e9"}`, "\xff"} {
		f.Add([]byte(s))
	}
	now := time.Unix(1700000000, 0)
	schemes := map[string]string{"linear": "webhookTimestamp", "mailgun": "signature"}
	f.Fuzz(func(t *testing.T, body []byte) {
		for scheme, member := range schemes {
			o := provider.Options{Scheme: scheme, Secrets: []string{"fuzz-secret"}}
			s, err := provider.NewSigner(o)
			if err != nil {
				t.Fatal(err)
			}
			r := &provider.Request{Body: bytes.Clone(body)}
			err = s.Sign(r, now)
			var before map[string]json.RawMessage
			isObject := json.Unmarshal(body, &before) == nil && before != nil && !bytes.Contains(body, []byte(`"`+member+`"`))
			if err != nil {
				if isObject {
					t.Fatalf("%s: a JSON object without %s refused: %v", scheme, member, err)
				}
				continue
			}
			var after map[string]json.RawMessage
			if err := json.Unmarshal(r.Body, &after); err != nil {
				t.Fatalf("%s: signed body is not JSON: %v\n%s", scheme, err, r.Body)
			}
			_, own := before[member]
			delete(after, member)
			if before != nil {
				delete(before, member)
				if !maps.EqualFunc(before, after, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
					t.Fatalf("%s: members changed:\n%s\n%s", scheme, body, r.Body)
				}
			}
			// Mailgun's block keeps the body's own timestamp and token, which
			// need not be valid ones: only a block fire made must verify.
			if scheme == "linear" || !own {
				if err := mustNew(t, o).Verify(r.Header, r.Body, now); err != nil {
					t.Fatalf("%s: signed body refused: %v\n%s", scheme, err, r.Body)
				}
			}
		}
	})
}

// FuzzFill: a template fills without a panic, and a filled one holds no
// placeholder that was in it.
func FuzzFill(f *testing.F) {
	for _, p := range provider.All() {
		for _, s := range p.Samples {
			f.Add(s.Body())
		}
	}
	f.Add([]byte("{{"))
	f.Add([]byte("{{id}}{{"))
	f.Add([]byte("}}{{id}}"))
	v := provider.Values{ID: "evt_1", Resource: "res_1", Type: "t", At: time.Unix(1700000000, 0), Attempt: 2}
	f.Fuzz(func(t *testing.T, template []byte) {
		out, err := provider.Fill(template, v)
		if err != nil {
			return
		}
		for _, p := range provider.Placeholders {
			if n := strings.Count(string(template), "{{"+p.Name+"}}"); n > 0 && strings.Count(string(out), "{{"+p.Name+"}}") >= n {
				t.Fatalf("{{%s}} left in %q", p.Name, out)
			}
		}
	})
}
