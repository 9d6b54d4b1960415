// Package admission keeps hookbox's admission budgets: how many
// deliveries may wait ([store] max_queued) and how much disk must stay
// free under the store ([store] min_free_disk). The figures are read in
// the background and the verdict cached, so that the receiver asks it on
// every request for the price of an atomic load, and refuses new webhooks
// with 503 before it reads or writes anything while a budget is exceeded.
// Acceptance resumes by itself once the figures are back under budget.
package admission

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Budget watches the budgets. The zero MaxQueued and MinFreeDisk turn
// each off.
type Budget struct {
	MaxQueued int64
	// Waiting counts the waiting deliveries (paused ones included).
	Waiting func(ctx context.Context) (int64, error)

	MinFreeDisk uint64
	// Dir is where the store's files are, for the free space of their
	// file system; FreeDisk reads it (default: statfs).
	Dir      string
	FreeDisk func(dir string) (uint64, error)

	// Interval is how often the figures are read (default 1s). A read
	// that takes long (a huge queue) stretches it to ten times the read,
	// so the count never takes more than a tenth of a core.
	Interval time.Duration
	Logger   zerolog.Logger

	verdict atomic.Pointer[error]
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// Exceeded is the error of a budget exceeded.
type Exceeded struct {
	Key  string // the config key: "store.max_queued", "store.min_free_disk"
	Have string // the figure now
	Want string // the budget
}

func (e *Exceeded) Error() string {
	if e.Key == "store.max_queued" {
		return fmt.Sprintf("over the admission budget: %s deliveries waiting, %s allows %s", e.Have, e.Key, e.Want)
	}
	return fmt.Sprintf("over the admission budget: %s free on the store's disk, %s asks for %s", e.Have, e.Key, e.Want)
}

// Start reads the figures once, then every Interval until Stop.
func (b *Budget) Start(ctx context.Context) {
	if b.Interval <= 0 {
		b.Interval = time.Second
	}
	if b.FreeDisk == nil {
		b.FreeDisk = freeDisk
	}
	ctx, b.cancel = context.WithCancel(ctx)
	took := b.check(ctx)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			t := time.NewTimer(max(b.Interval, 10*took))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			took = b.check(ctx)
		}
	}()
}

// Stop ends the background reads.
func (b *Budget) Stop() {
	if b.cancel != nil {
		b.cancel()
		b.wg.Wait()
	}
}

// Admit returns nil while every budget holds, else an *Exceeded: the
// verdict of the latest read, never a read of its own.
func (b *Budget) Admit() error {
	if p := b.verdict.Load(); p != nil {
		return *p
	}
	return nil
}

// check reads the figures, updates the verdict and returns how long the
// queue count took. A figure that cannot be read keeps the verdict it
// had: a store that cannot count cannot take the write either, and says
// so itself.
func (b *Budget) check(ctx context.Context) time.Duration {
	var verdict error
	start := time.Now()
	var took time.Duration
	if b.MaxQueued > 0 && b.Waiting != nil {
		n, err := b.Waiting(ctx)
		took = time.Since(start)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				b.Logger.Warn().Err(err).Msg("could not count waiting deliveries for the admission budget")
			}
			verdict = b.Admit()
		case n > b.MaxQueued:
			verdict = &Exceeded{Key: "store.max_queued", Have: fmt.Sprint(n), Want: fmt.Sprint(b.MaxQueued)}
		}
	}
	if verdict == nil && b.MinFreeDisk > 0 && b.Dir != "" {
		free, err := b.FreeDisk(b.Dir)
		switch {
		case err != nil:
			b.Logger.Warn().Err(err).Str("dir", b.Dir).Msg("could not read the free space of the store's disk for the admission budget")
			verdict = b.Admit()
		case free < b.MinFreeDisk:
			verdict = &Exceeded{Key: "store.min_free_disk", Have: bytes(free), Want: bytes(b.MinFreeDisk)}
		}
	}
	b.set(verdict)
	return took
}

// set stores the verdict, logging when admission stops or resumes.
func (b *Budget) set(verdict error) {
	old := b.Admit()
	if verdict == nil {
		b.verdict.Store(nil)
	} else {
		b.verdict.Store(&verdict)
	}
	var was, is *Exceeded
	switch {
	case old == nil && verdict != nil:
		b.Logger.Warn().Err(verdict).Msg("refusing new webhooks with 503 until back under the admission budget")
	case old != nil && verdict == nil:
		b.Logger.Info().Msg("back under the admission budget: accepting webhooks again")
	case errors.As(old, &was) && errors.As(verdict, &is) && was.Key != is.Key:
		b.Logger.Warn().Err(verdict).Msg("refusing new webhooks with 503 until back under the admission budget")
	}
}

// bytes is n bytes for a person.
func bytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
