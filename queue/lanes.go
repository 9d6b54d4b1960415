package queue

import (
	"fmt"
	"time"

	"hookbox/order"
)

// A lane is (target, order key): the deliveries of one target about one
// resource. At an ordered target (order fifo, latest or coalesce) only a
// lane's head is ever due; the others wait parked, out of the claim's
// reach, and the transaction that finishes a head (done, dead) or skips
// it promotes the next one. Every change of a lane's head happens in a
// transaction holding the lane's row (LaneTx.LockLane), so a lane never
// has two deliveries running, across workers, restarts and replicas. The
// claim itself is the same for every delivery: a head is an ordinary due
// row.
//
// The logic is here, once; the engines give its steps (LaneTx). The usual
// end of a fifo head, delivered or dead, an engine may do in statements of
// its own (AdvanceLane, then PromoteLane, to the same lane row and the same
// new head), as its store's writer runs it for every ordered delivery.

// LaneState is a lane's row.
type LaneState struct {
	Head        int64  // the delivery at the head; 0 for none
	LastRank    string // the comparable version last delivered ("" none)
	LastVersion string // that version as found
	LastEvent   int64  // the event last delivered (0 none)
	// BlockedSince is when the head's first attempt failed (zero while
	// its attempts succeed or none has run).
	BlockedSince time.Time
	// HeldSince (coalesce) is when the lane's current head first waited
	// for newer events.
	HeldSince time.Time
}

// LaneItem is a delivery of a lane as the lane logic sees it.
type LaneItem struct {
	ID, Event int64
	Rank      string // comparable version; "" missing
	Version   string // version as found
	Forced    bool   // replayed: never skipped
	Running   bool
	Queued    bool // waiting (pending, retrying or paused) or running
}

// before reports whether a comes first in its lane: lower version, then
// received first. A missing version ranks lowest ("").
func (a LaneItem) before(b LaneItem) bool {
	if a.Rank != b.Rank {
		return a.Rank < b.Rank
	}
	return a.ID < b.ID
}

// LaneTx is the steps of the lane logic, inside one write transaction of
// an engine.
type LaneTx interface {
	// LockLane returns the lane's row, created empty if missing, and
	// holds it until the transaction ends.
	LockLane(target, key string) (LaneState, error)
	SaveLane(target, key string, s LaneState) error
	// Item reads delivery id (and, where rows are locked, locks it).
	Item(id int64) (LaneItem, error)
	// Park takes a queued delivery out of the claim's reach.
	Park(id int64) error
	// Unpark makes a delivery due at at.
	Unpark(id int64, at time.Time) error
	// Skip finishes a queued, not running delivery as skipped.
	Skip(id int64, reason string, now time.Time) error
	// SkipStale skips the lane's waiting, unforced deliveries whose
	// version is not above rank, and returns how many.
	SkipStale(target, key, rank, reason string, now time.Time) (int64, error)
	// SkipWaiting skips the lane's waiting, unforced deliveries except
	// keep, and returns how many.
	SkipWaiting(target, key string, keep int64, reason string, now time.Time) (int64, error)
	// Next returns the lane's first waiting delivery (forced ones only,
	// if forced), or with newest the last one.
	Next(target, key string, forced, newest bool) (LaneItem, bool, error)
}

// Reasons of skipped deliveries: each begins with its kind.
const (
	ReasonStale      = "stale"
	ReasonSuperseded = "superseded"
)

func staleReason(s LaneState) string {
	return fmt.Sprintf("%s: version %s was delivered (event #%d)", ReasonStale, s.LastVersion, s.LastEvent)
}

func supersededReason(by LaneItem) string {
	return fmt.Sprintf("%s by #%d", ReasonSuperseded, by.Event)
}

func (s LaneState) stale(d LaneItem) bool {
	return d.Rank != "" && s.LastRank != "" && d.Rank <= s.LastRank
}

// EnterLane places d, a queued delivery of target's lane key (parked, or
// just put back to pending by a replay or a redelivery), in its lane:
// skipped if stale (latest, coalesce), made the head if the lane has none
// or if it comes before a head that has not started, superseding or
// superseded (coalesce), else parked behind the head. It returns whether
// d became a due head.
func EnterLane(tx LaneTx, l order.Lane, target, key string, id int64, now time.Time) (bool, error) {
	s, err := tx.LockLane(target, key)
	if err != nil {
		return false, err
	}
	d, err := tx.Item(id)
	if err != nil || !d.Queued || d.Running {
		return false, err
	}
	if l.Mode.SkipsStale() && !d.Forced && s.stale(d) {
		return false, tx.Skip(d.ID, staleReason(s), now)
	}
	var h LaneItem
	if s.Head != 0 && s.Head != d.ID {
		if h, err = tx.Item(s.Head); err != nil {
			return false, err
		}
	}
	switch {
	case s.Head == 0 || s.Head == d.ID || !h.Queued:
		// An empty lane (or one whose head was finished without the lane
		// knowing: a replay of it): d leads.
		at := now
		if !d.Forced {
			at = HeadAt(l, now)
		}
		return true, setHead(tx, target, key, s, d, at, now)
	case h.Running:
		return false, tx.Park(d.ID)
	case l.Mode == order.Coalesce && !d.Forced && !h.Forced:
		if d.before(h) {
			return false, tx.Skip(d.ID, supersededReason(h), now)
		}
		if err := tx.Skip(h.ID, supersededReason(d), now); err != nil {
			return false, err
		}
		held := s.HeldSince
		if held.IsZero() {
			held = now
		}
		at := earlier(now.Add(l.Wait), held.Add(l.MaxHold()))
		s.HeldSince = held
		s.Head, s.BlockedSince = d.ID, time.Time{}
		if err := tx.Unpark(d.ID, at); err != nil {
			return false, err
		}
		return true, tx.SaveLane(target, key, s)
	case d.before(h):
		if err := tx.Park(h.ID); err != nil {
			return false, err
		}
		return true, setHead(tx, target, key, s, d, now, now)
	}
	return false, tx.Park(d.ID)
}

// HeadAt is when a new delivery that leads an empty lane is due: now, or,
// coalescing, once its wait for newer ones has passed. An engine may queue
// a new delivery as its lane's head at HeadAt in one step (its lane
// empty, and the delivery not stale) rather than through EnterLane.
func HeadAt(l order.Lane, now time.Time) time.Time {
	if l.Mode == order.Coalesce && l.Wait > 0 {
		return now.Add(l.Wait)
	}
	return now
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func setHead(tx LaneTx, target, key string, s LaneState, d LaneItem, at, now time.Time) error {
	s.Head, s.BlockedSince, s.HeldSince = d.ID, time.Time{}, now
	if err := tx.Unpark(d.ID, at); err != nil {
		return err
	}
	return tx.SaveLane(target, key, s)
}

// LaneOutcome is what became of a lane's head.
type LaneOutcome int

// The outcomes of a head's attempt, for AdvanceLane.
const (
	LaneDone     LaneOutcome = iota // delivered
	LaneDead                        // dead: the lane goes on without it
	LaneRetrying                    // failed, retried later: the lane is blocked
	LaneReleased                    // interrupted by shutdown: it stays the head
)

// AdvanceLane records the outcome of d's attempt in its lane, whose row s
// the caller locked (LockLane) before it changed d: done records its
// version as the last delivered, and done or dead promote the next
// waiting delivery (latest and coalesce first skip the stale ones;
// coalesce runs only the newest and skips the others as superseded, a
// replayed one going first). A failed head (retry, due at retryAt) keeps
// its lane blocked; if a delivery that comes before it arrived while it
// ran (coalesce: a newer one), that one takes its place, due at retryAt.
// It returns the delivery that became due now, or 0.
func AdvanceLane(tx LaneTx, l order.Lane, target, key string, s LaneState, d LaneItem, out LaneOutcome, retryAt, now time.Time) (int64, error) {
	if s.Head != d.ID {
		return 0, nil // not its lane's head (the target's order changed)
	}
	switch out {
	case LaneReleased:
		return 0, nil
	case LaneRetrying:
		if s.BlockedSince.IsZero() {
			s.BlockedSince = now
		}
		if err := giveWay(tx, l, target, key, &s, d, retryAt, now); err != nil {
			return 0, err
		}
		return 0, tx.SaveLane(target, key, s)
	case LaneDone:
		if d.Rank != "" {
			s.LastRank, s.LastVersion = d.Rank, d.Version
		}
		s.LastEvent = d.Event
	}
	return PromoteLane(tx, l, target, key, s, now)
}

// giveWay makes the delivery that should lead the lane instead of d, its
// failing head, the head, due when d would have been retried.
func giveWay(tx LaneTx, l order.Lane, target, key string, s *LaneState, d LaneItem, retryAt, now time.Time) error {
	if d.Forced {
		return nil
	}
	if l.Mode == order.Coalesce {
		newest, ok, err := tx.Next(target, key, false, true)
		if err != nil || !ok || newest.Forced || newest.before(d) {
			return err
		}
		if err := tx.Skip(d.ID, supersededReason(newest), now); err != nil {
			return err
		}
		if _, err := tx.SkipWaiting(target, key, newest.ID, supersededReason(newest), now); err != nil {
			return err
		}
		s.Head = newest.ID
		return tx.Unpark(newest.ID, retryAt)
	}
	first, ok, err := tx.Next(target, key, false, false)
	if err != nil || !ok || !first.before(d) {
		return err
	}
	if err := tx.Park(d.ID); err != nil {
		return err
	}
	s.Head = first.ID
	return tx.Unpark(first.ID, retryAt)
}

// PromoteLane makes the lane's next waiting delivery its head, due now
// (see AdvanceLane), or leaves the lane empty, saves s, and returns the
// new head or 0.
func PromoteLane(tx LaneTx, l order.Lane, target, key string, s LaneState, now time.Time) (int64, error) {
	s.Head, s.BlockedSince, s.HeldSince = 0, time.Time{}, time.Time{}
	if l.Mode.SkipsStale() && s.LastRank != "" {
		if _, err := tx.SkipStale(target, key, s.LastRank, staleReason(s), now); err != nil {
			return 0, err
		}
	}
	next, ok, err := tx.Next(target, key, l.Mode == order.Coalesce, false)
	if err != nil {
		return 0, err
	}
	if !ok && l.Mode == order.Coalesce {
		if next, ok, err = tx.Next(target, key, false, true); err != nil {
			return 0, err
		}
		if ok {
			if _, err := tx.SkipWaiting(target, key, next.ID, supersededReason(next), now); err != nil {
				return 0, err
			}
		}
	}
	if ok {
		s.Head, s.HeldSince = next.ID, now
		if err := tx.Unpark(next.ID, now); err != nil {
			return 0, err
		}
	}
	return s.Head, tx.SaveLane(target, key, s)
}

// Lane is a lane as `hookbox lanes` shows it.
type Lane struct {
	Target, Key string
	Head        int64  // the head delivery; 0 for none
	HeadEvent   int64  // its event
	HeadStatus  string // its status
	Queued      int64  // deliveries waiting behind the head
	LastVersion string // the version last delivered ("" none)
	LastEvent   int64
	// BlockedSince is when the head's first attempt failed, while it is
	// retrying, or when its target was paused, while it is paused; zero
	// otherwise.
	BlockedSince time.Time
}

// LaneFilter selects lanes for a listing, by target then key.
type LaneFilter struct {
	Target  string
	Blocked bool      // only lanes whose head is retrying
	After   [2]string // (target, key) of the previous page's last lane
	Limit   int
}

// LaneStats are the lane figures for metrics.
type LaneStats struct {
	Blocked       int64     // lanes whose head is retrying
	OldestBlocked time.Time // BlockedSince of the longest blocked lane; zero if none
	// Skipped counts skipped deliveries by reason kind (stale, superseded).
	Skipped map[string]int64
}

// LaneOutcome is what f does to its delivery's lane.
func (f Finish) LaneOutcome() LaneOutcome {
	switch {
	case f.Attempt.Outcome == "ok":
		return LaneDone
	case f.Release:
		return LaneReleased
	case f.Dead:
		return LaneDead
	}
	return LaneRetrying
}
