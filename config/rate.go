package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rate is a number of events per second, minute or hour, written in TOML
// as "N/s", "N/m" or "N/h" ("50/s", "600/m"). The zero Rate is no limit.
type Rate struct {
	N   int           // how many
	Per time.Duration // in this long: a second, a minute or an hour
}

// PerSecond returns r as events a second; 0 for no limit.
func (r Rate) PerSecond() float64 {
	if r.N == 0 || r.Per == 0 {
		return 0
	}
	return float64(r.N) / r.Per.Seconds()
}

// String formats r as it is written in a config file; "" for no limit.
func (r Rate) String() string {
	if r.N == 0 {
		return ""
	}
	unit := map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h"}[r.Per]
	return strconv.Itoa(r.N) + "/" + unit
}

// MarshalText implements encoding.TextMarshaler.
func (r Rate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler. It returns an error for
// anything ParseRate rejects.
func (r *Rate) UnmarshalText(text []byte) error {
	v, err := ParseRate(string(text))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// ParseRate parses "N/s", "N/m" or "N/h" with N a whole number above 0. It
// returns an error for anything else, naming the form it wants.
func ParseRate(s string) (Rate, error) {
	bad := func(why string) (Rate, error) {
		return Rate{}, fmt.Errorf("invalid rate %q: %s (want N/s, N/m or N/h, e.g. \"50/s\")", s, why)
	}
	num, unit, ok := strings.Cut(s, "/")
	if !ok {
		return bad("no unit")
	}
	if !allDigits(num) || num == "" {
		return bad("the count must be a whole number")
	}
	n, err := strconv.Atoi(num)
	if err != nil || n > 1_000_000 {
		return bad("the count must be at most 1000000")
	}
	if n == 0 {
		return bad("the count must be greater than 0 (leave rate out for no limit)")
	}
	per, ok := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[unit]
	if !ok {
		return bad("the unit must be s, m or h")
	}
	return Rate{N: n, Per: per}, nil
}
