package refetch

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Rate is a number of fetches per period, as refetch_rate writes it:
// "25/s", "600/m", "5000/h".
type Rate struct {
	N   int
	Per time.Duration
}

// ParseRate reads "N/s", "N/m" or "N/h", N a whole number from 1. Its
// error says what it wants.
func ParseRate(s string) (Rate, error) {
	n, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Rate{}, fmt.Errorf("want a rate: N/s, N/m or N/h (e.g. \"25/s\")")
	}
	count, err := strconv.Atoi(n)
	if err != nil || count < 1 || count > 1_000_000 {
		return Rate{}, fmt.Errorf("want a rate: N/s, N/m or N/h with N a whole number from 1 to 1000000")
	}
	per := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[unit]
	if per == 0 {
		return Rate{}, fmt.Errorf("want a rate: N/s, N/m or N/h, not per %q", unit)
	}
	return Rate{N: count, Per: per}, nil
}

// Interval is the time between two fetches at this rate.
func (r Rate) Interval() time.Duration { return r.Per / time.Duration(r.N) }

func (r Rate) String() string {
	return strconv.Itoa(r.N) + "/" + map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h"}[r.Per]
}

// bucket spaces the fetches made with one credential: a token bucket
// holding one token, refilled every interval, so that no second (minute,
// hour) ever holds more fetches than the rate, whatever the burst before
// it. A provider's 429 holds it shut until the time it said. Every
// target fetching with the credential shares it.
type bucket struct {
	mu       sync.Mutex
	interval time.Duration
	next     time.Time // when the next fetch may start
	hold     time.Time // the provider asked for no fetch before this
}

// take reserves the next slot. It returns how long to wait for it, or,
// when that is longer than maxWait or the provider holds the bucket, a
// zero wait and how long until a slot frees (nothing reserved).
func (b *bucket) take(now time.Time, maxWait time.Duration) (wait, busy time.Duration, held bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Before(b.hold) {
		return 0, b.hold.Sub(now), true
	}
	at := b.next
	if at.Before(now) {
		at = now
	}
	if d := at.Sub(now); d > maxWait {
		return 0, d, false
	}
	b.next = at.Add(b.interval)
	return at.Sub(now), 0, false
}

// holdFor shuts the bucket for d from now (the provider's Retry-After).
func (b *bucket) holdFor(now time.Time, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if until := now.Add(d); until.After(b.hold) {
		b.hold = until
	}
}
