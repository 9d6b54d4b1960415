package cli

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable is s for a terminal: control characters other than tab (an
// escape sequence in a target's output could clear the screen or retitle
// the window) written as \xNN. --json output escapes them anyway.
func Printable(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, isControl) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i]) // a byte that is not UTF-8
		case isControl(r) && r <= 0xff:
			fmt.Fprintf(&b, "\\x%02x", r)
		case isControl(r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// isControl: control characters but tab, and the bidirectional controls
// that make text read as something else.
func isControl(r rune) bool {
	return (r != '\t' && unicode.IsControl(r)) || unicode.Is(unicode.Bidi_Control, r)
}

// Count is "1 delivery", "2 deliveries", "0 sources".
func Count[N int | int64](n N, noun string) string {
	if n != 1 {
		if strings.HasSuffix(noun, "y") {
			noun = strings.TrimSuffix(noun, "y") + "ies"
		} else {
			noun += "s"
		}
	}
	return fmt.Sprintf("%d %s", n, noun)
}

// OrDash is s, or "-" for an empty table cell.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
