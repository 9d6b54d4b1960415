package queue

import (
	"testing"
	"time"
)

// The bucket holds one second's worth: a full bucket lets that many start
// at once, then one per token's time; each job turned away gets the next
// turn, a token's time after the one before.
func TestLimiter_Rate(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	l := newLimiter(10, 0)
	for i := range 10 {
		if ok, _, _ := l.admit(now); !ok {
			t.Fatalf("job %d of a full bucket of 10 turned away", i+1)
		}
	}
	var turns []time.Time
	for range 3 {
		ok, until, reason := l.admit(now)
		if ok || reason != ThrottledRate {
			t.Fatalf("11th job at once: ok=%v reason=%q, want turned away for rate", ok, reason)
		}
		turns = append(turns, until)
	}
	for i, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond} {
		if got := turns[i].Sub(now); got != want {
			t.Errorf("turn %d in %v, want %v", i+1, got, want)
		}
	}
	// Each comes back at its turn and finds its token.
	for i, at := range turns {
		if ok, _, _ := l.admit(at); !ok {
			t.Errorf("job back at its turn %d (%v) turned away again", i+1, at.Sub(now))
		}
	}
	// Idle for a minute, the bucket holds a second's worth again, no more.
	later := turns[2].Add(time.Minute)
	n := 0
	for {
		if ok, _, _ := l.admit(later); !ok {
			break
		}
		n++
	}
	if n != 10 {
		t.Errorf("after a minute idle, %d start at once, want 10 (one second's worth)", n)
	}
}

// A slow rate still holds one token: "1/h" lets one job start, the next an
// hour later.
func TestLimiter_SlowRate(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	l := newLimiter(1.0/3600, 0)
	if ok, _, _ := l.admit(now); !ok {
		t.Fatal("the first job of 1/h turned away")
	}
	ok, until, _ := l.admit(now.Add(time.Minute))
	if ok || until.Sub(now) < 59*time.Minute || until.Sub(now) > time.Hour+time.Second {
		t.Errorf("second job: ok=%v, turn in %v, want about an hour after the first", ok, until.Sub(now))
	}
}

// Concurrency counts the slots held until released; jobs turned away are
// spaced by the attempts' measured time over the slots.
func TestLimiter_Concurrency(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	l := newLimiter(0, 2)
	for i := range 2 {
		if ok, _, _ := l.admit(now); !ok {
			t.Fatalf("job %d of 2 slots turned away", i+1)
		}
	}
	ok, until, reason := l.admit(now)
	if ok || reason != ThrottledConcurrency || !until.After(now) {
		t.Fatalf("third job: ok=%v reason=%q until=%v, want turned away for concurrency, later", ok, reason, until)
	}
	l.release(time.Second)
	if ok, _, _ := l.admit(now); !ok {
		t.Fatal("job after a slot was released turned away")
	}
	if ok, _, _ := l.admit(now); ok {
		t.Fatal("a third slot was given")
	}
	// The measured attempts (1 s) now space the turns: a slot is expected
	// every half second or so with two.
	for range 10 {
		l.release(time.Second)
		l.admit(now)
	}
	_, a, _ := l.admit(now)
	_, b, _ := l.admit(now)
	if step := b.Sub(a); step < 300*time.Millisecond || step > 600*time.Millisecond {
		t.Errorf("turns %v apart, want about 500ms (1s attempts over 2 slots)", step)
	}
	// A job that never ran gives its slot back without counting as a time.
	l.release(-1)
	if ok, _, _ := l.admit(now); !ok {
		t.Error("the slot of a job that never ran was not given back")
	}
}

func TestLimiter_None(t *testing.T) {
	if l := newLimiter(0, 0); l != nil {
		t.Errorf("a target without rate or concurrency has a limiter: %+v", l)
	}
}
