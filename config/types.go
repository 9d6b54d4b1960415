package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration written in TOML as a Go duration string ("90s",
// "10m", "1h30m") that may begin with a whole or fractional number of days
// ("30d", "1.5d", "7d12h"). Negative durations are rejected.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d the way it would be written in a config file.
func (d Duration) String() string {
	const day = 24 * time.Hour
	v := time.Duration(d)
	if v < day {
		return shortDuration(v)
	}
	days, rest := v/day, v%day
	if rest == 0 {
		return strconv.FormatInt(int64(days), 10) + "d"
	}
	return strconv.FormatInt(int64(days), 10) + "d" + shortDuration(rest)
}

// shortDuration is v.String() without zero trailing units: "10m", not "10m0s".
func shortDuration(v time.Duration) string {
	s := v.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler. It returns an error for
// anything ParseDuration rejects.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := ParseDuration(string(text))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// ParseDuration parses a Go duration optionally led by a number of days:
// "30d", "1.5d", "7d12h", "90s". It returns an error for negative values,
// values that overflow, and anything time.ParseDuration rejects.
func ParseDuration(s string) (time.Duration, error) {
	bad := func() (time.Duration, error) {
		return 0, fmt.Errorf("invalid duration %q (want e.g. \"90s\", \"10m\", \"1h30m\", \"30d\")", s)
	}
	if s == "" || strings.TrimSpace(s) != s {
		return bad()
	}
	if s[0] == '-' {
		return 0, fmt.Errorf("invalid duration %q: must not be negative", s)
	}
	rest := strings.TrimPrefix(s, "+")

	var days time.Duration
	if i := strings.IndexByte(rest, 'd'); i >= 0 {
		num := rest[:i]
		if !isDecimal(num) {
			return bad()
		}
		f, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return bad()
		}
		ns := f * float64(24*time.Hour)
		if ns >= math.MaxInt64 {
			return 0, fmt.Errorf("invalid duration %q: too large", s)
		}
		days = time.Duration(ns)
		rest = rest[i+1:]
		if rest == "" {
			return days, nil
		}
		if rest[0] == '+' || rest[0] == '-' {
			return bad()
		}
	}
	v, err := time.ParseDuration(rest)
	if err != nil {
		return bad()
	}
	if v < 0 {
		return 0, fmt.Errorf("invalid duration %q: must not be negative", s)
	}
	if days > math.MaxInt64-v {
		return 0, fmt.Errorf("invalid duration %q: too large", s)
	}
	return days + v, nil
}

// isDecimal reports whether s is digits with at most one '.' between digits.
func isDecimal(s string) bool {
	whole, frac, hasDot := strings.Cut(s, ".")
	if whole == "" || !allDigits(whole) {
		return false
	}
	return !hasDot || (frac != "" && allDigits(frac))
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Size is a number of bytes, written in TOML as an integer or as a string with
// an optional binary unit: "1024", "1024B", "512KiB", "1MiB", "2GiB".
// Decimal units (KB, MB) are rejected on purpose: they are ambiguous.
type Size int64

// Int returns s as an int64.
func (s Size) Int() int64 { return int64(s) }

// String formats s with the largest binary unit that divides it exactly.
func (s Size) String() string {
	v := int64(s)
	for _, u := range sizeUnits {
		if u.n > 1 && v != 0 && v%u.n == 0 {
			return strconv.FormatInt(v/u.n, 10) + u.name
		}
	}
	return strconv.FormatInt(v, 10) + "B"
}

// MarshalText implements encoding.TextMarshaler.
func (s Size) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler. It returns an error for
// anything ParseSize rejects. A TOML integer reaches it as its decimal text.
func (s *Size) UnmarshalText(text []byte) error {
	v, err := ParseSize(string(text))
	if err != nil {
		return err
	}
	*s = Size(v)
	return nil
}

var sizeUnits = []struct {
	name string
	n    int64
}{
	{"GiB", 1 << 30},
	{"MiB", 1 << 20},
	{"KiB", 1 << 10},
	{"B", 1},
}

// ParseSize parses "1024", "1024B", "512KiB", "1MiB" or "2GiB" (a space
// before the unit is allowed). It returns an error for negative or
// fractional numbers, unknown units and overflow.
func ParseSize(str string) (int64, error) {
	bad := func() (int64, error) {
		return 0, fmt.Errorf("invalid size %q (want bytes or a number with B, KiB, MiB or GiB, e.g. \"1MiB\")", str)
	}
	i := 0
	for i < len(str) && str[i] >= '0' && str[i] <= '9' {
		i++
	}
	if i == 0 {
		if strings.HasPrefix(str, "-") {
			return 0, fmt.Errorf("invalid size %q: must not be negative", str)
		}
		return bad()
	}
	n, err := strconv.ParseInt(str[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: too large", str)
	}
	unit := strings.TrimPrefix(str[i:], " ")
	if unit == "" {
		return n, nil
	}
	for _, u := range sizeUnits {
		if unit == u.name {
			if n > math.MaxInt64/u.n {
				return 0, fmt.Errorf("invalid size %q: too large", str)
			}
			return n * u.n, nil
		}
	}
	switch strings.ToUpper(unit) {
	case "K", "KB", "M", "MB", "G", "GB":
		return 0, fmt.Errorf("invalid size %q: use binary units KiB, MiB or GiB", str)
	}
	return bad()
}

// StringList is a list of strings written in TOML as either one string or an
// array of strings.
type StringList []string

// errStringList never contains the value: a StringList may hold secrets.
var errStringList = errors.New("want a string or an array of strings")

// UnmarshalTOML implements toml.Unmarshaler. It returns an error for anything
// but a string or an array of strings; the error never quotes the value.
func (l *StringList) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		*l = StringList{v}
		return nil
	case []any:
		out := make(StringList, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return errStringList
			}
			out = append(out, s)
		}
		*l = out
		return nil
	}
	return errStringList
}
