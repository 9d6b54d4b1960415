package config

import (
	"strconv"
	"strings"
)

// scanLines maps each key of a TOML document that the decoder has already
// accepted to the 1-based line where it is set, using index paths for arrays
// of tables: "server.listen", "source[1]", "source[1].verify". The decoder
// keeps positions to itself, and its own would not tell [[source]] elements
// apart, so this walks the text once. It only has to be right for valid
// documents; on anything else it returns what it found without failing.
func scanLines(doc string) map[string]int {
	s := lineScanner{
		lines:  make(map[string]int),
		arrIdx: make(map[string]int),
		counts: make(map[string]int),
	}
	for i, line := range strings.Split(doc, "\n") {
		s.line(i+1, line)
	}
	return s.lines
}

type lineScanner struct {
	lines  map[string]int
	arrIdx map[string]int // unindexed path of an array of tables → current element
	counts map[string]int // indexed path of an array of tables → elements so far
	table  string         // index path of the current table, "" at the top
	inML   string         // the closing delimiter of an open multi-line string
	depth  int            // open brackets and braces of a value spanning lines
}

func (s *lineScanner) line(n int, line string) {
	if s.inML != "" || s.depth > 0 {
		s.value(line)
		return
	}
	t := strings.TrimSpace(line)
	switch {
	case t == "" || t[0] == '#':
	case strings.HasPrefix(t, "[["):
		parts, _ := keyParts(t[2:])
		if len(parts) == 0 {
			return
		}
		parent := s.render(parts[:len(parts)-1])
		c := parent + "." + parts[len(parts)-1]
		s.arrIdx[strings.Join(parts, ".")] = s.counts[c]
		s.counts[c]++
		s.table = s.render(parts)
		s.record(s.table, n)
	case t[0] == '[':
		parts, _ := keyParts(t[1:])
		if len(parts) == 0 {
			return
		}
		s.table = s.render(parts)
		s.record(s.table, n)
	default:
		parts, rest := keyParts(t)
		if len(parts) == 0 || !strings.HasPrefix(rest, "=") {
			return
		}
		key := strings.Join(parts, ".")
		if s.table != "" {
			key = s.table + "." + key
		}
		s.record(key, n)
		s.value(rest[1:])
	}
}

func (s *lineScanner) record(key string, n int) {
	if _, ok := s.lines[key]; !ok {
		s.lines[key] = n
	}
}

// render turns header parts into an index path: "source.x" → "source[1].x".
func (s *lineScanner) render(parts []string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
		if n, ok := s.arrIdx[strings.Join(parts[:i+1], ".")]; ok {
			b.WriteString("[" + strconv.Itoa(n) + "]")
		}
	}
	return b.String()
}

// value follows strings, brackets and comments in (part of) a value, so that
// lines inside multi-line strings and arrays are not taken for keys.
func (s *lineScanner) value(v string) {
	for i := 0; i < len(v); {
		if s.inML != "" {
			j := strings.Index(v[i:], s.inML)
			if j < 0 {
				return
			}
			i += j + 3
			for i < len(v) && v[i] == s.inML[0] { // up to two quotes may end the content
				i++
			}
			s.inML = ""
			continue
		}
		switch c := v[i]; c {
		case '#':
			return
		case '[', '{':
			s.depth++
			i++
		case ']', '}':
			if s.depth > 0 {
				s.depth--
			}
			i++
		case '"', '\'':
			delim := strings.Repeat(string(c), 3)
			if strings.HasPrefix(v[i:], delim) {
				s.inML = delim
				i += 3
				continue
			}
			i = skipString(v, i)
		default:
			i++
		}
	}
}

// skipString returns the index just past the one-line string starting at v[i].
func skipString(v string, i int) int {
	q := v[i]
	for j := i + 1; j < len(v); j++ {
		switch v[j] {
		case '\\':
			if q == '"' {
				j++
			}
		case q:
			return j + 1
		}
	}
	return len(v)
}

// keyParts parses a dotted key at the start of t and returns its parts and
// the text after it (from the "=" or "]" on).
func keyParts(t string) ([]string, string) {
	var parts []string
	for {
		t = strings.TrimLeft(t, " \t")
		if t == "" {
			return parts, ""
		}
		switch t[0] {
		case '"':
			end := skipString(t, 0)
			p, err := strconv.Unquote(t[:end])
			if err != nil {
				p = strings.Trim(t[:end], `"`)
			}
			parts = append(parts, p)
			t = t[end:]
		case '\'':
			end := skipString(t, 0)
			parts = append(parts, strings.Trim(t[:end], "'"))
			t = t[end:]
		default:
			j := 0
			for j < len(t) && isBareKeyChar(t[j]) {
				j++
			}
			if j == 0 {
				return parts, t
			}
			parts = append(parts, t[:j])
			t = t[j:]
		}
		t = strings.TrimLeft(t, " \t")
		if !strings.HasPrefix(t, ".") {
			return parts, t
		}
		t = t[1:]
	}
}

func isBareKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
