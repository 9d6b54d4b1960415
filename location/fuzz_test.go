package location

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{"json:id", "header:X-GitHub-Delivery", "json:a.b.c", "body-sha256", "auto",
		"header:webhook-id,header:svix-id", "json:", "json:a..b", "header:", "auto:x", "", ",", " json:id , body-sha256 "} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, isID bool) {
		field := Type
		if isID {
			field = ID
		}
		loc, err := Parse(s, field)
		if err != nil {
			if loc != nil {
				t.Fatalf("Parse(%q) = %v with error %v, want nil", s, loc, err)
			}
			return
		}
		if want := strings.Count(s, ",") + 1; len(loc) != want {
			t.Fatalf("Parse(%q) has %d parts, want %d", s, len(loc), want)
		}
		for _, p := range loc {
			switch p.kind {
			case header:
				if p.name == "" || p.name != http.CanonicalHeaderKey(p.name) {
					t.Fatalf("Parse(%q): header name %q not canonical", s, p.name)
				}
			case jsonField:
				if len(p.path) == 0 || slices.Contains(p.path, "") {
					t.Fatalf("Parse(%q): JSON path %q has an empty segment", s, p.path)
				}
			case bodySHA256:
				if !isID {
					t.Fatalf("Parse(%q) of a type took body-sha256", s)
				}
			case auto:
			default:
				t.Fatalf("Parse(%q): unknown kind %d", s, p.kind)
			}
		}
		// What hookbox check keeps parses to itself.
		again, err := Parse(loc.Spec(), field)
		if err != nil || again.Spec() != loc.Spec() || again.String() != loc.String() {
			t.Fatalf("Parse(%q).Spec()=%q parses to %v, %v", s, loc.Spec(), again, err)
		}
		_ = loc.String()
	})
}

// The auto headers are looked up without canonicalising: they must be
// canonical already.
func TestAutoHeadersCanonical(t *testing.T) {
	for _, n := range append(slices.Clone(autoIDHeaders), autoTypeHeaders...) {
		if n != http.CanonicalHeaderKey(n) {
			t.Errorf("auto header %q, want the canonical %q", n, http.CanonicalHeaderKey(n))
		}
	}
}
