package dedupe

import (
	"context"
	"time"

	"github.com/rs/zerolog"
)

// Store is what the Sweeper needs of a store engine.
type Store interface {
	// Sweep drops bodies and headers of events received before
	// payloadsBefore whose deliveries are all finished, and deletes events
	// (their dedupe keys) received before keysBefore, keeping those with a
	// dead delivery, and the newest event, whose number would otherwise be
	// handed out again. Each write examines or deletes at most batch
	// events. It returns how many events it swept and deleted.
	Sweep(ctx context.Context, payloadsBefore, keysBefore time.Time, batch int) (swept, deleted int64, err error)
}

// Sweeper runs retention in the background: every Interval it drops the
// bodies of finished events older than Payloads and deletes the dedupe keys
// (whole events) older than Keys. A failed sweep is logged and the loop
// goes on.
type Sweeper struct {
	Store    Store
	Interval time.Duration
	Payloads time.Duration // keep bodies this long
	Keys     time.Duration // keep events, and so their dedupe keys, this long
	// First is how long after Start the first sweep runs (default a minute,
	// or Interval if shorter): a serve restarted more often than the
	// interval still sweeps.
	First  time.Duration
	Now    func() time.Time
	Logger zerolog.Logger

	cancel context.CancelFunc
	done   chan struct{}
}

// sweepBatch is how many events one sweep transaction covers.
const sweepBatch = 500

// Start starts the loop; Stop ends it.
func (s *Sweeper) Start(ctx context.Context) {
	ctx, s.cancel = context.WithCancel(ctx)
	s.done = make(chan struct{})
	go s.run(ctx)
}

// Stop cancels the loop (a sweep under way rolls back its batch) and waits
// for it to end.
func (s *Sweeper) Stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	<-s.done
}

func (s *Sweeper) run(ctx context.Context) {
	defer close(s.done)
	first := s.First
	if first <= 0 {
		first = min(s.Interval, time.Minute)
	}
	timer := time.NewTimer(first)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
			timer.Reset(s.Interval)
		}
		now := s.Now()
		swept, deleted, err := s.Store.Sweep(ctx, now.Add(-s.Payloads), now.Add(-s.Keys), sweepBatch)
		if err != nil {
			if ctx.Err() == nil {
				s.Logger.Error().Err(err).Msg("retention sweep failed; will retry")
			}
			continue
		}
		if swept > 0 || deleted > 0 {
			s.Logger.Info().Int64("payloads_dropped", swept).Int64("events_deleted", deleted).Msg("retention sweep")
		}
	}
}
