// Package order is what hookbox knows of ordering lanes apart from any
// store: the modes a target's order key takes (none, fifo, latest,
// coalesce) and the comparable form of an order_version, a number or an
// RFC 3339 time.
//
// A lane is (target, the source's order_key value). The store engines keep
// lanes in a table of their own and compare versions by their Rank: a
// string whose byte order is the versions' numeric order, so that an index
// sorts a lane's waiting deliveries as the versions compare.
package order

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Mode is a target's order.
type Mode string

// The modes of the order key, as the config spells them.
const (
	None     Mode = "none"     // deliveries run in parallel, as they come
	FIFO     Mode = "fifo"     // one at a time per lane, in version order
	Latest   Mode = "latest"   // fifo, and a delivery not newer than the last delivered one is skipped (stale)
	Coalesce Mode = "coalesce" // latest, and of several waiting only the newest runs (the others superseded)
)

// Modes lists the modes, the default first.
var Modes = []Mode{None, FIFO, Latest, Coalesce}

// ParseMode reads a target's order ("" is none).
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return None, nil
	}
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown order %q (want none, fifo, latest or coalesce)", s)
}

// SkipsStale reports whether m skips a delivery not newer than the last
// one delivered in its lane.
func (m Mode) SkipsStale() bool { return m == Latest || m == Coalesce }

// Lane is how one target orders its deliveries.
type Lane struct {
	Mode Mode
	// Wait (coalesce) holds a lane's fresh head this long for newer
	// events, at most MaxHold in all while newer ones keep coming.
	Wait time.Duration
}

// MaxHold is the longest a stream of newer events holds a coalescing
// lane's head: ten times its wait.
func (l Lane) MaxHold() time.Duration { return 10 * l.Wait }

// Rank returns the comparable form of a version: a number (JSON's form,
// or a header's: "17", "-3.5", "1.2e9") or an RFC 3339 time, which ranks
// as its Unix time in seconds (so an event's "created" seconds and an
// "updated_at" time of the same instant rank alike). Two ranks compare as
// their versions do, byte by byte. ok is false for anything else: an
// unreadable version, which orders as a missing one.
func Rank(version string) (rank string, ok bool) {
	v := strings.TrimSpace(version)
	if v == "" {
		return "", false
	}
	if r, ok := decimalRank(v); ok {
		return r, true
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return "", false
	}
	sec, nsec := t.Unix(), t.Nanosecond()
	s := strconv.FormatInt(sec, 10)
	if nsec != 0 {
		s += "." + strings.TrimRight(fmt.Sprintf("%09d", nsec), "0")
	}
	return decimalRank(s)
}

// maxExponent bounds the decimal exponent a rank holds (four digits).
const maxExponent = 4999

// decimalRank encodes a decimal number as a string in the number's order:
// a sign class ('0' negative, '1' zero, '2' positive), then the exponent
// of its normalized form 0.d1d2…×10^e as four digits offset by 5000
// (complemented for negatives), then its significant digits (each
// complemented, and closed by '~', for negatives, so that a longer
// negative, which is smaller, sorts first).
func decimalRank(s string) (string, bool) {
	neg := false
	switch {
	case strings.HasPrefix(s, "-"):
		neg, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	mant, expPart, hasExp := strings.Cut(strings.ToLower(s), "e")
	exp := 0
	if hasExp {
		e, err := strconv.Atoi(expPart)
		if err != nil || expPart == "" || len(expPart) > 6 {
			return "", false
		}
		exp = e
	}
	whole, frac, _ := strings.Cut(mant, ".")
	if whole == "" && frac == "" || !digits(whole) || !digits(frac) || strings.Count(mant, ".") > 1 {
		return "", false
	}
	all := whole + frac
	exp += len(whole)
	lead := len(all) - len(strings.TrimLeft(all, "0"))
	all, exp = all[lead:], exp-lead
	all = strings.TrimRight(all, "0")
	if all == "" {
		return "1", true
	}
	if exp > maxExponent || exp < -maxExponent {
		return "", false
	}
	var b strings.Builder
	if !neg {
		fmt.Fprintf(&b, "2%04d%s", exp+5000, all)
		return b.String(), true
	}
	fmt.Fprintf(&b, "0%04d", 9999-(exp+5000))
	for i := 0; i < len(all); i++ {
		b.WriteByte('9' - (all[i] - '0'))
	}
	b.WriteByte('~')
	return b.String(), true
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
