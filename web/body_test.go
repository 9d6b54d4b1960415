package web_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"hookbox/replay"
	"hookbox/web"
)

func TestNewBody(t *testing.T) {
	for _, c := range []struct {
		name, body string
		swept      bool
		kind       string
		tree       bool
	}{
		{"JSON", `{"b":1,"a":[true,null,"x"]}`, false, "json", true},
		{"Text", "a=1&b=2", false, "text", false},
		{"Binary", "\xff\xfe", false, "binary", false},
		{"NUL is binary", "a\x00b", false, "binary", false},
		{"Empty", "", false, "empty", false},
		{"Swept", "", true, "swept", false},
		{"JSON with trailing data is text", `{"a":1} x`, false, "text", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := web.NewBody([]byte(c.body), c.swept)
			if b.Kind != c.kind || (b.Tree != nil) != c.tree {
				t.Errorf("kind=%s tree=%v, want %s %v", b.Kind, b.Tree != nil, c.kind, c.tree)
			}
		})
	}
	// The tree keeps the body's member order, not a sorted one.
	b := web.NewBody([]byte(`{"zeta":1,"alpha":{"m":"v"},"list":[1,2]}`), false)
	var keys []string
	for _, n := range b.Tree.Children {
		keys = append(keys, n.Key)
	}
	if strings.Join(keys, ",") != "zeta,alpha,list" || b.Tree.Children[1].Children[0].Value != `"v"` || b.Tree.Children[2].Count() != "2 items" {
		t.Errorf("tree %+v: keys %v, want zeta,alpha,list in order", b.Tree, keys)
	}
}

func TestDiff(t *testing.T) {
	a := web.NewBody([]byte(`{"id":1,"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9}`), false)
	b := web.NewBody([]byte(`{"id":2,"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":10}`), false)
	lines, err := web.Diff(a, b)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		got = append(got, l.Op+l.Text)
	}
	want := []string{" {", `-  "id": 1,`, `+  "id": 2,`, `   "a": 1,`, `   "b": 2,`, `   "c": 3,`, "~2 unchanged lines", `   "f": 6,`,
		`   "g": 7,`, `   "h": 8,`, `-  "i": 9`, `+  "i": 10`, " }"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("diff:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if lines, _ := web.Diff(a, a); len(lines) != 1 || lines[0].Op != "~" {
		t.Errorf("diff of a body with itself: %v, want one folded run", lines)
	}
	long := web.NewBody([]byte(strings.Repeat("line\n", 3000)), false)
	if _, err := web.Diff(long, a); err == nil {
		t.Error("a diff of 3,000 lines ran, want it refused as too long")
	}
}

func TestParseQuery(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	q, err := web.ParseQuery(url.Values{"source": {"stripe"}, "type": {"invoice.paid"}, "status": {"dead"}, "q": {"evt"},
		"since": {"2h"}, "cursor": {"42"}, "limit": {"10"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if v := q.Values().Encode(); v != "limit=10&q=evt&since=2h&source=stripe&status=dead&type=invoice.paid" {
		t.Errorf("Values()=%s: want the filters and limit, not the cursor", v)
	}
	for query, field := range map[string]string{
		"status=done%20": "status", "limit=-1": "limit", "cursor=0": "cursor", "since=2026-13-01T00:00:00Z": "since",
		"until=x": "until", "since=2026-12-01T11:00:00Z&until=2026-12-01T10:00:00Z": "until",
	} {
		v, _ := url.ParseQuery(query)
		_, err := web.ParseQuery(v, now)
		fe, ok := err.(*replay.FieldError)
		if !ok || fe.Field != field {
			t.Errorf("ParseQuery(%s): %v, want a mistake in %s", query, err, field)
		}
	}
}
