// Package bench is the body of `hookbox bench`: it measures how fast a
// webhook receiver can answer. Run runs a benchmark as Options describe it:
// the servers of a mode (a real hookbox, a bare HTTP server that stores
// nothing: the ceiling to compare against) as child processes, each
// started by Serve in `hookbox bench-server`, loaded in alternating rounds,
// with the report and the goals. Its parts: a keep-alive HTTP load
// generator as cheap as wrk (Load: closed loop over N connections, or open
// loop at a fixed rate), a latency histogram, a delivery sink, child process
// control with RSS and CPU accounting from /proc, a raw fork/exec loop and
// the disk's own fsync rate. github.lua makes wrk send the generator's
// requests, to check it against wrk.
//
// Everything here talks to 127.0.0.1 only and every run is bounded in time.
package bench

import (
	"math"
	"math/bits"
	"time"
)

// subBits is log2 of the sub-buckets per power of two: 32 sub-buckets keep
// a reported percentile within about 3% of the true value.
const subBits = 5

const (
	subCount = 1 << subBits
	nBuckets = (64 - subBits + 1) * subCount
)

// Histogram records durations in log-linear buckets, like an HDR histogram
// with two significant digits. The zero value is ready to use; it is not safe
// for concurrent use (keep one per goroutine and Merge).
type Histogram struct {
	counts [nBuckets]uint64
	n      uint64
	min    time.Duration
	max    time.Duration
}

func bucketOf(v uint64) int {
	if v < subCount {
		return int(v)
	}
	e := bits.Len64(v) - 1 // >= subBits
	sub := (v >> (e - subBits)) & (subCount - 1)
	return (e-subBits+1)*subCount + int(sub)
}

// bucketTop is the largest value that falls in bucket i.
func bucketTop(i int) uint64 {
	if i < subCount {
		return uint64(i)
	}
	e := i/subCount + subBits - 1
	sub := uint64(i % subCount)
	lo := (subCount + sub) << (e - subBits)
	return lo + (1 << (e - subBits)) - 1
}

// Record adds one duration.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(uint64(d))]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.n++
}

// Merge adds o's samples to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
}

// Count is the number of recorded samples.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest recorded sample.
func (h *Histogram) Max() time.Duration { return h.max }

// Percentile returns the smallest bucket bound that at least q (0..1) of the
// samples are at or below, capped at the largest sample; 0 if none.
func (h *Histogram) Percentile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var cum uint64
	for i, c := range h.counts {
		cum += c
		if cum >= rank {
			return min(time.Duration(bucketTop(i)), h.max)
		}
	}
	return h.max
}
