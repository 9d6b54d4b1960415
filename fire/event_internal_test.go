package fire

import (
	"regexp"
	"testing"
	"time"
)

// Fresh ids have the shape of the provider's own, and differ each time.
func TestFreshLike(t *testing.T) {
	for example, shape := range map[string]string{
		"evt_3MtwBwLkdIwHu7ix0snN0B15":                       `^evt_[a-zA-Z0-9]{24}$`,
		"72d3162e-cc78-11e3-81ab-4c9367dc0958":               `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`,
		"notif_ccd8a4d0-f965-11e3-a367-c779cae3e1b3":         `^notif_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`,
		"SM1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d":                 `^SM[0-9a-f]{32}$`,
		"1216000000000000002":                                `^[1-9][0-9]{18}$`,
		"a8ce0edb2dd8301dee6c2405235584e45aa91d1e9f979f3de0": `^[0-9a-f]{50}$`,
		"01HQ8ZB6T8G0ZJ3W3Q8WNK4F1S":                         `^[0-9A-Z]{26}$`,
		"refs-x":                                             `^[a-z0-9]{4}-[a-z0-9]$`,
	} {
		re := regexp.MustCompile(shape)
		a, b := freshLike(example), freshLike(example)
		if !re.MatchString(a) || !re.MatchString(b) || a == b {
			t.Errorf("freshLike(%q): %q and %q, want two different ids matching %s", example, a, b, shape)
		}
	}
}

func TestLatency(t *testing.T) {
	ms := func(n int) Millis { return Millis(time.Duration(n) * time.Millisecond) }
	var answers []Answer
	for i := 1; i <= 100; i++ {
		answers = append(answers, Answer{Status: 200, Latency: ms(i)})
	}
	if p99, in := latency(answers, time.Second); p99 != ms(99) || !in {
		t.Errorf("p99 of 1..100 ms: %v, in time %t; want 99ms, true", p99.D(), in)
	}
	answers = append(answers, Answer{TimedOut: true, Latency: ms(1000)}, Answer{Dropped: true, Latency: ms(5000)})
	if p99, in := latency(answers, time.Second); p99 != ms(100) || in {
		t.Errorf("with an answer that never came: %v, %t; want 100ms and not in time", p99.D(), in)
	}
}
