package queue

import (
	"math"
	"sync"
	"time"
)

// limiter holds a target's rate and concurrency limits for one pool: a
// token bucket and a count of the slots in use. The dispatcher asks it
// before a claimed job goes to the workers; a job it turns away is
// deferred in the store to the time its turn is expected, so that a
// throttled target never holds a worker, and the store's claim (which
// reads only due rows) passes over its waiting jobs at no cost. The
// dispatcher calls admit and the workers release.
type limiter struct {
	mu sync.Mutex

	rate  float64 // tokens a second; 0: no rate limit
	burst float64 // the bucket's size: one second's worth, at least 1
	conc  int     // slots; 0: no concurrency limit

	tokens   float64
	filled   time.Time // when tokens was last brought up to date
	nextRate time.Time // the turn given to the last job deferred for a token

	inUse    int
	avg      time.Duration // the target's attempts take about this long
	nextSlot time.Time     // the turn given to the last job deferred for a slot
}

// firstAttemptGuess stands in for the duration of a target's attempts
// until one has been measured: it spaces the jobs deferred for a slot.
const firstAttemptGuess = 100 * time.Millisecond

func newLimiter(rate float64, conc int) *limiter {
	if rate <= 0 && conc <= 0 {
		return nil
	}
	l := &limiter{rate: rate, conc: conc, avg: firstAttemptGuess}
	if rate > 0 {
		l.burst = max(rate, 1)
		l.tokens = l.burst
	}
	return l
}

// Why a job was deferred, as OnThrottled reports it.
const (
	ThrottledRate        = "rate"
	ThrottledConcurrency = "concurrency"
)

// admit takes a token and a slot for a job starting now and returns true,
// or takes neither and returns when the job should be tried again and
// which limit turned it away. Jobs turned away one after another get
// successive turns, a token's or an attempt's time apart, so that a
// backlog comes back at the pace the target is allowed, not all at once.
func (l *limiter) admit(now time.Time) (ok bool, until time.Time, reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conc > 0 && l.inUse >= l.conc {
		step := max(l.avg/time.Duration(l.conc), time.Millisecond)
		l.nextSlot = later(now, l.nextSlot).Add(step)
		return false, ceilMilli(l.nextSlot), ThrottledConcurrency
	}
	if l.rate > 0 {
		if now.After(l.filled) {
			l.tokens = min(l.burst, l.tokens+now.Sub(l.filled).Seconds()*l.rate)
			l.filled = now
		}
		// A token that is a rounding error short counts: a deferred job
		// comes back when its token is due, and must not be sent back.
		if l.tokens < 1-1e-9 {
			step := time.Duration(float64(time.Second) / l.rate)
			first := now.Add(time.Duration(math.Ceil((1 - l.tokens) / l.rate * float64(time.Second))))
			l.nextRate = later(first, l.nextRate.Add(step))
			return false, ceilMilli(l.nextRate), ThrottledRate
		}
		l.tokens--
	}
	if l.conc > 0 {
		l.inUse++
	}
	return true, time.Time{}, ""
}

// release gives back the slot of an attempt that took d (d < 0: a job
// that never ran).
func (l *limiter) release(d time.Duration) {
	if l.conc <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inUse--
	if d >= 0 {
		l.avg = (4*l.avg + d) / 5
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// ceilMilli rounds t up to the millisecond, the store's resolution: a job
// deferred to a turn is never due before it.
func ceilMilli(t time.Time) time.Time {
	if r := t.Sub(t.Truncate(time.Millisecond)); r > 0 {
		return t.Truncate(time.Millisecond).Add(time.Millisecond)
	}
	return t
}
