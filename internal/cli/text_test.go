package cli

import "testing"

// What the CLI prints for a terminal: control characters (C0 and C1), the
// bidirectional overrides and bytes that are not UTF-8 are escaped; text
// in any script, tabs and U+FFFD are kept.
func TestPrintable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain é 漢字", "plain é 漢字"},
		{"a\x1b[2Jb", `a\x1b[2Jb`},
		{"c1\u009bx", `c1\x9bx`},
		{"rlo\u202ex", `rlo\u202ex`},
		{"bad\xffbyte", `bad\xffbyte`},
		{"tab\tok", "tab\tok"},
		{"kept\ufffd", "kept\ufffd"},
	} {
		if got := Printable(c.in); got != c.want {
			t.Errorf("Printable(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		noun string
		want string
	}{{0, "source", "0 sources"}, {1, "source", "1 source"}, {1, "delivery", "1 delivery"}, {2, "delivery", "2 deliveries"}} {
		if got := Count(c.n, c.noun); got != c.want {
			t.Errorf("Count(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}
