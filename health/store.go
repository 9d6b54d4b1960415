package health

import (
	"context"
	"math"
	"time"
)

// The alarms, by the name their alerts carry as "kind".
const (
	DuplicateRate = "duplicate_rate"  // per source: share of duplicates in the window
	OldestQueued  = "oldest_queued"   // per target: age of its oldest queued delivery
	ReceiveToDone = "receive_to_done" // per target: p99 from receipt to done, over the window
	TargetFailing = "target_failing"  // per target: failed attempts in a row
	Silence       = "silence"         // per source: time since its last event
)

// Kinds lists every alarm, in the order they are shown.
var Kinds = []string{DuplicateRate, OldestQueued, ReceiveToDone, TargetFailing, Silence}

// Store is what the monitor needs of a store engine: the figures, read
// from the tables the store keeps anyway, and the alarms' state with the
// notices still to send, kept in a table so that a restart neither loses
// nor repeats them.
type Store interface {
	// SourceCounts counts, per source, the events first received at or
	// after since and the duplicates received since then. A duplicate of
	// an event first received before since counts once however often it
	// came again (the events table keeps the number of redeliveries and
	// the last one's time, not each one's): a lower bound.
	SourceCounts(ctx context.Context, since time.Time) ([]SourceCount, error)
	// LastEvent is when the last event or duplicate from source arrived;
	// false if none is stored.
	LastEvent(ctx context.Context, source string) (time.Time, bool, error)
	// QueueAges counts, per target, the queued deliveries (pending,
	// retrying, running), those created before now minus each of edges,
	// and dates the oldest.
	QueueAges(ctx context.Context, now time.Time, edges []time.Duration) ([]QueueAge, error)
	// DoneLatency measures target's deliveries done at or after since:
	// how many, and the times from their event's receipt to done at the
	// 50th and 99th percentiles (nearest rank: see Rank).
	DoneLatency(ctx context.Context, target string, since time.Time) (Latency, error)
	// FailureStreaks counts, for each of targets, its failed attempts that
	// ended after its last success (its latest done delivery), on the
	// deliveries that have not succeeded since: queued ones whose last
	// attempt failed, and dead ones.
	FailureStreaks(ctx context.Context, targets []string) (map[string]int, error)

	// Alarms lists the alarms that have ever fired, firing or not.
	Alarms(ctx context.Context) ([]Alarm, error)
	// SetAlarm moves an alarm to a.Firing, at a.Since, only from the other
	// state (an alarm never stored counts as not firing), and with notify
	// queues a notice of the change, in the same transaction. It reports
	// whether it changed anything: two monitors that see the same change
	// queue one notice.
	SetAlarm(ctx context.Context, a Alarm, notify bool) (bool, error)
	// DueNotices returns up to limit notices due at now, oldest first,
	// leaving out those behind an earlier notice of the same alarm that is
	// still to be sent: an alarm's "resolved" never overtakes its "firing".
	DueNotices(ctx context.Context, now time.Time, limit int) ([]Notice, error)
	// RecordNotice records one send's outcome, once durable.
	RecordNotice(ctx context.Context, o NoticeOutcome) error
}

// SourceCount is one source's receipts in a window.
type SourceCount struct {
	Source     string
	Received   int64     // events first received in the window
	Duplicates int64     // duplicates received in the window (a lower bound: see Store)
	Last       time.Time // the last event or duplicate in the window; zero if none
}

// QueueAge is one target's queued deliveries.
type QueueAge struct {
	Target    string
	Queued    int64
	OlderThan []int64   // queued deliveries older than each of the edges asked for
	Oldest    time.Time // creation of the oldest
}

// Latency is receipt-to-done of one target's deliveries done in a window.
type Latency struct {
	Done     int64
	P50, P99 time.Duration // 0 when Done is 0
}

// Rank is the 0-based position, in n values sorted ascending, of the
// q-quantile by nearest rank: the smallest value with at least q·n values
// at or below it.
func Rank(n int64, q float64) int64 {
	if n <= 0 {
		return 0
	}
	r := int64(math.Ceil(q*float64(n))) - 1
	return min(max(r, 0), n-1)
}

// Alarm is the state of one alarm of one source or target.
type Alarm struct {
	Kind    string    // DuplicateRate, …
	Subject string    // the source's or the target's name
	Firing  bool      //
	Since   time.Time // when it entered this state
	FiredAt time.Time // when it last began firing (kept when it resolves)
	Value   float64   // the figure when it entered this state
	Bound   float64
}

// Notice is a change of an alarm to send through [alert].
type Notice struct {
	ID      int64
	Kind    string
	Subject string
	Firing  bool // else resolved
	Value   float64
	Bound   float64
	FiredAt time.Time // when the alarm began firing
	At      time.Time // when it changed
	Tries   int       // sends tried so far
}

// NoticeOutcome is the result of one send of a notice.
type NoticeOutcome struct {
	ID     int64
	Err    error     // nil: sent
	Next   time.Time // with Err: when to try again, unless GaveUp
	GaveUp bool      // with Err: that was the last try
	At     time.Time // when the send ended
}
