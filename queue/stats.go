package queue

import "time"

// TargetStats are one target's queue figures, read at each metrics scrape.
type TargetStats struct {
	// ByStatus counts the target's waiting deliveries by status (pending,
	// retrying, running and any other waiting status) and its dead
	// letters not revived (Dead).
	ByStatus     map[string]int64
	OldestQueued time.Time // creation of its oldest waiting delivery; zero if none
}

// TargetQueue is the queue by target, as an engine reads it in one go.
type TargetQueue map[string]*TargetStats

// Add counts n deliveries of target in status; oldest, when not zero, is
// the creation of the oldest of them.
func (q TargetQueue) Add(target, status string, n int64, oldest time.Time) {
	s := q[target]
	if s == nil {
		s = &TargetStats{ByStatus: map[string]int64{}}
		q[target] = s
	}
	s.ByStatus[status] += n
	if !oldest.IsZero() && (s.OldestQueued.IsZero() || oldest.Before(s.OldestQueued)) {
		s.OldestQueued = oldest
	}
}
