package queue_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"hookbox/queue"
)

func TestBackoff_Delay(t *testing.T) {
	const base, maxDelay = time.Second, 10 * time.Second
	// r places the delay in the jitter band: 0 its bottom, 0.5 its middle
	// (no jitter), 1 its top.
	for _, tt := range []struct {
		n      int
		jitter float64
		r      float64
		want   time.Duration
	}{
		{n: 0, jitter: 0.2, r: 0.5, want: time.Second}, // treated as the first retry
		{n: 1, jitter: 0.2, r: 0.5, want: time.Second},
		{n: 2, jitter: 0.2, r: 0.5, want: 2 * time.Second},
		{n: 3, jitter: 0.2, r: 0.5, want: 4 * time.Second},
		{n: 4, jitter: 0.2, r: 0.5, want: 8 * time.Second},
		{n: 5, jitter: 0.2, r: 0.5, want: maxDelay},
		{n: 60, jitter: 0.2, r: 0.5, want: maxDelay},
		{n: 1, jitter: 0.2, r: 0, want: 800 * time.Millisecond},
		{n: 1, jitter: 0.2, r: 1, want: 1200 * time.Millisecond},
		{n: 3, jitter: 0.2, r: 0, want: 3200 * time.Millisecond},
		{n: 4, jitter: 0.2, r: 1, want: 9600 * time.Millisecond},
		{n: 4, jitter: 0.25, r: 1, want: maxDelay}, // jittered past the cap is capped
		{n: 5, jitter: 0.2, r: 0, want: 8 * time.Second},
		{n: 5, jitter: 0.2, r: 1, want: maxDelay},
		{n: 3, jitter: 0, r: 0, want: 4 * time.Second}, // no jitter: r is not used
	} {
		t.Run(fmt.Sprintf("n=%d jitter=%v r=%v", tt.n, tt.jitter, tt.r), func(t *testing.T) {
			b := queue.Backoff{Base: base, Max: maxDelay, Jitter: tt.jitter, Rand: func() float64 { return tt.r }}
			if got := b.Delay(tt.n); got != tt.want {
				t.Errorf("Delay(%d)=%v, want %v", tt.n, got, tt.want)
			}
		})
	}

	// A cap near the largest duration (max_backoff = "100000d") neither
	// overflows the doubling nor the jitter into a negative delay.
	t.Run("Huge cap", func(t *testing.T) {
		huge := 100000 * 24 * time.Hour
		for _, r := range []float64{0, 0.5, 1} {
			b := queue.Backoff{Base: time.Second, Max: huge, Jitter: 0.2, Rand: func() float64 { return r }}
			prev := time.Duration(0)
			for n := 1; n <= 80; n++ {
				d := b.Delay(n)
				if d <= 0 || d > huge || d < prev {
					t.Fatalf("r %v: Delay(%d)=%v after %v, want growing, within (0, %v]", r, n, d, prev, huge)
				}
				prev = d
			}
			if prev < time.Duration(float64(huge)*0.8) {
				t.Errorf("r %v: Delay(80)=%v, want it to reach the cap's band", r, prev)
			}
		}
	})

	// Without a cap (the alerter's tries) the doubling stops at the largest
	// duration instead of wrapping around.
	t.Run("No cap", func(t *testing.T) {
		b := queue.Backoff{Base: 5 * time.Second}
		for n, want := range map[int]time.Duration{1: 5 * time.Second, 2: 10 * time.Second, 3: 20 * time.Second, 4: 40 * time.Second} {
			if got := b.Delay(n); got != want {
				t.Errorf("Delay(%d)=%v, want %v", n, got, want)
			}
		}
		prev := time.Duration(0)
		for n := 1; n <= 100; n++ {
			d := b.Delay(n)
			if d < prev {
				t.Fatalf("Delay(%d)=%v after %v, want growing", n, d, prev)
			}
			prev = d
		}
		if prev != math.MaxInt64 {
			t.Errorf("Delay(100)=%v, want the largest duration", prev)
		}
		b.Jitter = 0.2
		if d := b.Delay(100); d <= 0 {
			t.Errorf("jittered Delay(100)=%v, want positive", d)
		}
	})

	t.Run("Default jitter within 20%", func(t *testing.T) {
		b := queue.Backoff{Base: base, Max: time.Hour, Jitter: 0.2}
		lo, hi := time.Hour, time.Duration(0)
		for range 2000 {
			d := b.Delay(2)
			lo, hi = min(lo, d), max(hi, d)
		}
		if lo < 1600*time.Millisecond || hi > 2400*time.Millisecond {
			t.Errorf("Delay(2) ranged %v–%v, want within 1.6s–2.4s", lo, hi)
		}
		if hi-lo < 400*time.Millisecond {
			t.Errorf("Delay(2) ranged %v–%v, want jitter spread over the ±20%% band", lo, hi)
		}
	})
}
