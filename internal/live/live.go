// Package live proves, on a loop, that the parts a running serve cannot
// do without still work: the store's writer commits, the workers run. The
// latest verdict answers /readyz; each loop that passes pets systemd's
// watchdog, so that a wedged writer stops the pets and gets the unit
// restarted.
package live

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Check is one thing to prove; Run returns nil while it works.
type Check struct {
	Name string
	Run  func(ctx context.Context) error
}

// Monitor runs its checks every Interval, each within Timeout.
type Monitor struct {
	Checks   []Check
	Interval time.Duration // default 2s
	Timeout  time.Duration // default Interval
	// OnPass, if set, is called after each round in which every check
	// passed (the watchdog's pet).
	OnPass func()
	Logger zerolog.Logger

	verdict atomic.Pointer[error]
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// Start runs one round at once, then a round every Interval until Stop.
func (m *Monitor) Start(ctx context.Context) {
	if m.Interval <= 0 {
		m.Interval = 2 * time.Second
	}
	if m.Timeout <= 0 {
		m.Timeout = m.Interval
	}
	ctx, m.cancel = context.WithCancel(ctx)
	m.round(ctx)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		ticker := time.NewTicker(m.Interval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			m.round(ctx)
		}
	}()
}

// Stop ends the loop.
func (m *Monitor) Stop() {
	if m.cancel != nil {
		m.cancel()
		m.wg.Wait()
	}
}

// Err is the latest round's first failure ("store: …"), or nil.
func (m *Monitor) Err() error {
	if p := m.verdict.Load(); p != nil {
		return *p
	}
	return nil
}

func (m *Monitor) round(ctx context.Context) {
	var failed error
	for _, c := range m.Checks {
		cctx, cancel := context.WithTimeout(ctx, m.Timeout)
		err := c.Run(cctx)
		cancel()
		if ctx.Err() != nil {
			return // stopping: no verdict
		}
		if err != nil {
			failed = fmt.Errorf("%s: %w", c.Name, err)
			break
		}
	}
	old := m.Err()
	if failed == nil {
		m.verdict.Store(nil)
		if old != nil {
			m.Logger.Info().Msg("liveness checks pass again")
		}
		if m.OnPass != nil {
			m.OnPass()
		}
		return
	}
	m.verdict.Store(&failed)
	if old == nil || old.Error() != failed.Error() {
		m.Logger.Error().Err(failed).Msg("liveness check failed: /readyz answers 503 and the systemd watchdog is not petted")
	}
}
