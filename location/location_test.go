package location_test

import (
	"net/http"
	"strings"
	"testing"

	"hookbox/location"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    string // String(), "" for an error
		wantErr string
	}{
		{"header:X-GitHub-Delivery", "header X-Github-Delivery", ""},
		{"json:id", "JSON field id", ""},
		{"json:data.object.id", "JSON field data.object.id", ""},
		{"body-sha256", "body-sha256", ""},
		{"auto", "auto (the usual headers, then the JSON id or type field)", ""},
		{"header:webhook-id, header:svix-id", "header Webhook-Id or header Svix-Id", ""},
		{"json:event_id,body-sha256", "JSON field event_id or body-sha256", ""},
		{"header:", "", `want a header name after "header:"`},
		{"json:", "", "want a dot-separated path"},
		{"json:a..b", "", "want a dot-separated path"},
		{"body-sha256:x", "", `"body-sha256:x": want "header:Name"`},
		{"query:id", "", `"query:id": want "header:Name"`},
		{"", "", "empty alternative"},
	} {
		t.Run(c.in, func(t *testing.T) {
			loc, err := location.Parse(c.in, location.ID)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Parse(%q) err=%v, want one containing %q", c.in, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", c.in, err)
			}
			if got := loc.String(); got != c.want {
				t.Fatalf("String()=%q, want %q", got, c.want)
			}
		})
	}
}

// The messages are what hookbox check prints after the key and its value.
func TestParse_Messages(t *testing.T) {
	const want = `want "header:Name", "json:a.b.c", "body-sha256" or "auto", alternatives separated by ","`
	for _, c := range []struct {
		in    string
		field location.Field
		want  string
	}{
		{"json:id,", location.ID, "empty alternative (" + want + ")"},
		{",", location.Type, "empty alternative (" + want + ")"},
		{"auto:x", location.ID, `"auto:x": ` + want},
		{"xml:id", location.ID, `"xml:id": ` + want},
		{"Header:X-Id", location.ID, `"Header:X-Id": ` + want},
		{"header:X Id", location.ID, `"header:X Id": want a header name after "header:"`},
		{"header: X-Id", location.ID, `"header: X-Id": want a header name after "header:"`},
		{"json:", location.Type, `"json:": want a dot-separated path after "json:", e.g. "json:data.id"`},
		{"body-sha256", location.Type, `"body-sha256" is only for event_id`},
		{"json:type, body-sha256", location.Type, `"body-sha256" is only for event_id`},
	} {
		t.Run(c.in, func(t *testing.T) {
			loc, err := location.Parse(c.in, c.field)
			if err == nil || err.Error() != c.want {
				t.Fatalf("Parse(%q) = %v, %v; want error %q", c.in, loc, err, c.want)
			}
			if loc != nil {
				t.Fatalf("Parse(%q) returned %v with its error, want nil", c.in, loc)
			}
		})
	}
}

func TestLocation_Spec(t *testing.T) {
	for in, want := range map[string]string{
		"json:id":                     "json:id",
		" header:Idem , json:id ":     "header:Idem,json:id",
		"header:X-GitHub-Delivery":    "header:X-GitHub-Delivery", // as written, not canonical
		"auto, json:x.y,body-sha256 ": "auto,json:x.y,body-sha256",
	} {
		loc, err := location.Parse(in, location.ID)
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if got := loc.Spec(); got != want {
			t.Errorf("Parse(%q).Spec()=%q, want %q", in, got, want)
		}
	}
}

func TestLocation_Find(t *testing.T) {
	gh := map[string]string{"X-GitHub-Delivery": "g1", "X-GitHub-Event": "push", "X-Empty": ""}
	for _, c := range []struct {
		name, spec string
		field      location.Field
		headers    map[string]string
		body       string
		want       string
		wantErr    string
	}{
		{"Header", "header:x-github-delivery", location.ID, gh, `{}`, "g1", ""},
		{"Empty header is none", "header:X-Empty,json:id", location.ID, gh, `{"id":"j"}`, "j", ""},
		{"Auto id header first", "auto", location.ID, gh, `{"id":"j"}`, "g1", ""},
		{"Auto type header", "auto", location.Type, gh, `{"type":"t"}`, "push", ""},
		{"Auto type from JSON", "auto", location.Type, nil, `{"type":"t"}`, "t", ""},
		{"Auto type misses quietly", "auto", location.Type, nil, `not json`, "", ""},
		{"JSON error when nothing else", "json:id", location.ID, nil, `{"id":1} {"id":2}`, "", "data after the top-level value"},
		{"Not found", "header:X-None", location.ID, gh, `{}`, "", "not found"},
		{"Array index", "json:1.eventId", location.ID, nil, `[{"eventId":1},{"eventId":22}]`, "22", ""},
		{"Array index out of range", "json:2.eventId", location.ID, nil, `[{"eventId":1}]`, "", "not found"},
		{"Array index with a leading zero", "json:01.eventId", location.ID, nil, `[{"eventId":1},{"eventId":2}]`, "", "not found"},
		{"Digits name an object's member", "json:0", location.ID, nil, `{"0":"zero"}`, "zero", ""},
		{"Index into an object's array", "json:events.0.id", location.ID, nil, `{"events":[{"id":"e0"}]}`, "e0", ""},
		{"Not an index", "json:x.id", location.ID, nil, `[{"id":"a"}]`, "", "not found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			loc, err := location.Parse(c.spec, c.field)
			if err != nil {
				t.Fatal(err)
			}
			h := http.Header{}
			for k, v := range c.headers {
				h.Set(k, v)
			}
			got, err := loc.Find(&location.Request{Header: h, Body: []byte(c.body)})
			if got != c.want || (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("Find=%q, %v; want %q, error containing %q", got, err, c.want, c.wantErr)
			}
		})
	}
}

// One Request decodes its body once, however many locations read it.
func TestRequest_JSON(t *testing.T) {
	r := &location.Request{Body: []byte(`{"id":"a","type":"b"}`)}
	d1, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	r.Body = []byte(`not json`) // a second decode would fail
	if d2, err := r.JSON(); err != nil || d2.(map[string]any)["id"] != d1.(map[string]any)["id"] {
		t.Fatalf("second JSON() = %v, %v; want the first decode", d2, err)
	}
}
