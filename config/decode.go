package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// problems collects every ValidationError of one Parse.
//
// Keys are addressed two ways: key is the index path used to find the line
// ("source[1].verify"), label is what the user reads ("source[stripe].verify").
type problems struct {
	file   string
	lines  map[string]int // index path → 1-based line, from scanLines
	list   []*ValidationError
	failed map[string]bool // index paths that did not decode; not validated again
	fatal  bool            // a syntax error: there is nothing else to check
}

func newProblems(file string) *problems {
	return &problems{file: file, failed: make(map[string]bool)}
}

// add records a problem, unless key already failed to decode, and returns
// it (nil when skipped).
func (p *problems) add(key, label, value, msg string) *ValidationError {
	if p.failed[key] {
		return nil
	}
	e := &ValidationError{
		File:  p.file,
		Field: label,
		Value: value,
		Line:  p.line(key),
		Msg:   msg,
	}
	p.list = append(p.list, e)
	return e
}

// line returns the line of key or, when key is absent from the file (a
// missing or defaulted key), of the nearest table that holds it.
func (p *problems) line(key string) int {
	for {
		if n, ok := p.lines[key]; ok {
			return n
		}
		i := strings.LastIndexByte(key, '.')
		if i < 0 {
			// "source[0]" set inline (source = [{…}]): the line of "source".
			i = strings.LastIndexByte(key, '[')
		}
		if i <= 0 {
			return 0
		}
		key = key[:i]
	}
}

// err returns the problems ordered by line (those without one last) as an
// errors.Join, or nil.
func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	slices.SortStableFunc(p.list, func(a, b *ValidationError) int {
		if (a.Line == 0) != (b.Line == 0) {
			if a.Line == 0 {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.Line, b.Line)
	})
	errs := make([]error, len(p.list))
	for i, e := range p.list {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// scope is a table of the config: "server", or "source[1]" shown as "source[stripe]".
type scope struct {
	p          *problems
	key, label string
}

func (s scope) add(field, value, msg string) *ValidationError {
	return s.p.add(s.key+"."+field, s.label+"."+field, value, msg)
}

func (s scope) addf(field, value, format string, args ...any) {
	s.add(field, value, fmt.Sprintf(format, args...))
}

// elementScopes names the elements of an array of tables by their name when
// it is valid and unique, else by their index.
func elementScopes(p *problems, kind string, names []string) []scope {
	count := make(map[string]int, len(names))
	for _, n := range names {
		count[n]++
	}
	out := make([]scope, len(names))
	for i, n := range names {
		key := kind + "[" + strconv.Itoa(i) + "]"
		label := key
		if validName(n) && count[n] == 1 {
			label = kind + "[" + n + "]"
		}
		out[i] = scope{p: p, key: key, label: label}
	}
	return out
}

// decode decodes data over cfg key by key, so that one bad value does not
// hide the others: each section and each [[source]]/[[target]] is kept as a
// toml.Primitive and each of its keys decoded into its field on its own.
func decode(p *problems, data []byte, cfg *Config) {
	var top map[string]toml.Primitive
	md, err := toml.Decode(string(data), &top)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			p.list = append(p.list, &ValidationError{File: p.file, Line: syntaxLine(data, pe.Position), Msg: "syntax error: " + pe.Message})
		} else {
			p.list = append(p.list, &ValidationError{File: p.file, Msg: err.Error()})
		}
		p.fatal = true
		return
	}
	p.lines = scanLines(string(data))

	sections := map[string]any{
		"server":    &cfg.Server,
		"store":     &cfg.Store,
		"delivery":  &cfg.Delivery,
		"alert":     &cfg.Alert,
		"retention": &cfg.Retention,
		"health":    &cfg.Health,
		"admin":     &cfg.Admin,
	}
	known := []string{"server", "store", "delivery", "alert", "retention", "health", "admin", "source", "target"}
	for _, k := range sortedKeys(top) {
		switch k {
		case "source":
			decodeArray(p, &md, top[k], k, &cfg.Sources)
		case "target":
			decodeArray(p, &md, top[k], k, &cfg.Targets)
		default:
			dst, ok := sections[k]
			if !ok {
				p.add(k, k, "", unknownKey(k, known))
				p.failed[k] = true
				continue
			}
			sc := scope{p: p, key: k, label: k}
			if _, ok := rawValue(&md, top[k]).(map[string]any); !ok {
				p.add(k, k, "", fmt.Sprintf("want a table ([%s]), got %s", k, tomlType(rawValue(&md, top[k]))))
				p.failed[k] = true
				continue
			}
			var keys map[string]toml.Primitive
			if err := md.PrimitiveDecode(top[k], &keys); err != nil {
				p.add(k, k, "", err.Error())
				p.failed[k] = true
				continue
			}
			decodeFields(&md, keys, dst, sc)
		}
	}

	// Every key was either decoded above or reported with a parent; this
	// catches anything that slipped between the two.
	reported := make(map[string]bool, len(p.failed))
	for f := range p.failed {
		reported[stripIndices(f)] = true
	}
	for _, k := range md.Undecoded() {
		if !reportedUnder(reported, k) {
			key := k.String()
			p.add(key, key, "", "unknown key")
			p.failed[key] = true
			reported[key] = true
		}
	}
}

// reportedUnder reports whether k or one of its parents is in reported,
// which holds paths without array indices (a toml.Key has none).
func reportedUnder(reported map[string]bool, k toml.Key) bool {
	for i := 1; i <= len(k); i++ {
		if reported[strings.Join(k[:i], ".")] {
			return true
		}
	}
	return false
}

func stripIndices(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// decodeArray decodes an array of tables ([[source]], [[target]]) into dst.
func decodeArray[T any](p *problems, md *toml.MetaData, prim toml.Primitive, kind string, dst *[]T) {
	if !isTableArray(rawValue(md, prim)) {
		p.add(kind, kind, "", fmt.Sprintf("want an array of tables ([[%s]]), got %s", kind, tomlType(rawValue(md, prim))))
		p.failed[kind] = true
		return
	}
	var elems []map[string]toml.Primitive
	if err := md.PrimitiveDecode(prim, &elems); err != nil {
		p.add(kind, kind, "", err.Error())
		p.failed[kind] = true
		return
	}
	names := make([]string, len(elems))
	for i, e := range elems {
		if n, ok := e["name"]; ok {
			s, _ := rawValue(md, n).(string)
			names[i] = s
		}
	}
	scopes := elementScopes(p, kind, names)
	*dst = make([]T, len(elems))
	for i, e := range elems {
		decodeFields(md, e, &(*dst)[i], scopes[i])
	}
}

// isTableArray reports whether v is [[x]] tables or an inline array of tables.
func isTableArray(v any) bool {
	switch v := v.(type) {
	case []map[string]any:
		return true
	case []any:
		for _, e := range v {
			if _, ok := e.(map[string]any); !ok {
				return false
			}
		}
		return true
	}
	return false
}

// decodeFields decodes each key of one table into the field of dst (a
// pointer to struct) with that toml tag, reporting unknown keys and values
// of the wrong type.
func decodeFields(md *toml.MetaData, keys map[string]toml.Primitive, dst any, sc scope) {
	rv := reflect.ValueOf(dst).Elem()
	rt := rv.Type()
	fields := make(map[string]int, rt.NumField())
	var names []string
	for i := range rt.NumField() {
		tag, _, _ := strings.Cut(rt.Field(i).Tag.Get("toml"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		fields[tag] = i
		names = append(names, tag)
	}
	for _, k := range sortedKeys(keys) {
		i, ok := fields[k]
		if !ok {
			sc.add(k, "", unknownKey(k, names))
			sc.p.failed[sc.key+"."+k] = true
			continue
		}
		f := rv.Field(i)
		if err := md.PrimitiveDecode(keys[k], f.Addr().Interface()); err != nil {
			raw := rawValue(md, keys[k])
			value := ""
			if k != "secret" { // never echo a secret, even a malformed one
				value = scalarText(raw)
			}
			msg := fmt.Sprintf("want %s, got %s", goTypeName(f.Type()), tomlType(raw))
			var pe toml.ParseError
			if errors.As(err, &pe) {
				msg = pe.Message
			}
			if e := sc.add(k, value, msg); e != nil {
				_, e.quoted = raw.(string) // workers = "4" is shown as written, not as 4
			}
			sc.p.failed[sc.key+"."+k] = true
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func rawValue(md *toml.MetaData, prim toml.Primitive) any {
	var v any
	if err := md.PrimitiveDecode(prim, &v); err != nil {
		return nil
	}
	return v
}

// scalarText is v as it would be written, or "" for tables and arrays.
func scalarText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case int64, bool:
		return fmt.Sprint(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return ""
}

func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case map[string]any:
		return "a table"
	case []map[string]any:
		return "an array of tables"
	case []any:
		return "an array"
	case nil:
		return "nothing"
	}
	return "a date/time"
}

var (
	durationType   = reflect.TypeFor[Duration]()
	sizeType       = reflect.TypeFor[Size]()
	stringListType = reflect.TypeFor[StringList]()
	percentType    = reflect.TypeFor[Percent]()
)

func goTypeName(t reflect.Type) string {
	switch t {
	case durationType:
		return `a duration string (e.g. "90s", "30d")`
	case sizeType:
		return `a size (e.g. "1MiB" or a number of bytes)`
	case stringListType:
		return "a string or an array of strings"
	case percentType:
		return `a percentage (e.g. "20%")`
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Int {
			return "an array of integers"
		}
		return "an array of strings"
	case reflect.Map:
		return "a table of strings"
	}
	return t.String()
}

// unknownKey suggests the nearest known key for a likely typo.
func unknownKey(k string, known []string) string {
	best, bestD := "", 3
	for _, c := range known {
		if d := editDistance(k, c); d < bestD {
			best, bestD = c, d
		}
	}
	if best != "" {
		return fmt.Sprintf("unknown key (did you mean %q?)", best)
	}
	return "unknown key"
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// syntaxLine is the line of the byte a syntax error points at. The decoder's
// own line number has already counted that byte when it is the newline ending
// the line at fault (an unclosed "[table"), one line too late.
func syntaxLine(data []byte, pos toml.Position) int {
	if pos.Start < 0 || pos.Start > len(data) {
		return pos.Line
	}
	return 1 + bytes.Count(data[:pos.Start], []byte{'\n'})
}
