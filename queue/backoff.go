package queue

import (
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is a wait that doubles with each try: Base·2^(n−1), spread by
// ±Jitter and capped at Max. The pool's retries, the alerter's tries and the
// pool's rewriting of a result the store refused all wait by one.
type Backoff struct {
	Base time.Duration
	// Max caps every delay, jitter included; 0 is no cap (but the largest
	// duration: doubling never overflows).
	Max time.Duration
	// Jitter spreads each delay over ±Jitter of it (0.2: ±20%), so that
	// deliveries that failed together do not all retry at the same instant;
	// 0 is none.
	Jitter float64
	// Rand returns where in the jitter band a delay falls, in [0, 1); nil
	// uses math/rand/v2. Tests pin it.
	Rand func() float64
}

// Delay is the wait after n tries (n < 1 counts as 1): Base·2^(n−1) within
// ±Jitter, never above Max.
func (b Backoff) Delay(n int) time.Duration {
	limit := b.Max
	if limit <= 0 {
		limit = math.MaxInt64
	}
	d := b.Base
	for i := 1; i < n && d < limit; i++ {
		if d > limit/2 {
			d = limit // doubling a cap near the largest duration would overflow
			break
		}
		d *= 2
	}
	d = min(d, limit)
	if b.Jitter <= 0 {
		return d
	}
	r := rand.Float64()
	if b.Rand != nil {
		r = b.Rand()
	}
	if f := float64(d) * (1 - b.Jitter + 2*b.Jitter*r); f < float64(limit) {
		return time.Duration(f)
	}
	return limit
}
