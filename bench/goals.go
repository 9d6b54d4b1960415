package bench

import (
	"fmt"

	"hookbox/sqlite"
)

// goal is a target figure for a ratio or value, from the project's goals.
type goal struct {
	name  string
	value Spread
	want  string
	ok    bool
}

func (b *runner) goals() []goal {
	var gs []goal
	ratio := func(name, num, numKey, den, denKey string, atLeast float64) {
		s := Ratio(b.rows, num, numKey, den, denKey)
		if s.N > 0 {
			gs = append(gs, goal{name, s, fmt.Sprintf("≥ %.2f", atLeast), s.Median >= atLeast})
		}
	}
	value := func(name, server, key, cmp string, limit float64) {
		vs := Values(b.rows, server, key)
		if len(vs) == 0 {
			return
		}
		s := SpreadOf(vs)
		ok := s.Median <= limit
		if cmp == "≥" {
			ok = s.Median >= limit
		}
		gs = append(gs, goal{name, s, fmt.Sprintf("%s %g", cmp, limit), ok})
	}
	switch b.Mode {
	case ModeIngest:
		want := 0.45
		if b.Conns >= 256 {
			want = 0.5
		}
		ratio("acks/s hookbox ÷ bare", "hookbox", "acks_per_s", "bare", "acks_per_s", want)
		if b.Conns <= 64 {
			value("hookbox p99 ms", "hookbox", "p99_ms", "≤", 20)
		}
		rss := 32.0
		if b.Conns > 64 {
			rss = 64
		}
		value("hookbox RSS MiB", "hookbox", "rss_mib", "≤", rss)
		value("hookbox WAL peak MiB", "hookbox", "wal_mib", "≤", float64(sqlite.DefaultJournalSizeLimit>>20))
		ratio("acks/s prefilled ÷ empty", "hookbox+prefill", "acks_per_s", "hookbox", "acks_per_s", 0.9)
	case ModeRate:
		value("hookbox p99 ms", "hookbox", "p99_ms", "≤", 5)
	case ModeE2E:
		ratio("delivered/s ÷ ingest acks/s", "hookbox+url", "delivered_per_s", "hookbox", "acks_per_s", 0.4)
		value("backlog drain events/s", "backlog", "per_s", "≥", 10000)
	case ModeCommand:
		ratio("command deliveries/s ÷ raw fork/exec", "hookbox+command", "per_s", "fork/exec", "per_s", 0.8)
	}
	return gs
}
