// Package leader runs the work that must run on one serve replica at a
// time (the retention sweep, the dead-letter alerts, the health checks)
// on the replica holding that work's lease, a row the store keeps with an
// expiry, renewed well before it passes (river's elector). A replica that
// stops gives its leases up, so that another takes them over at once; one
// that is killed loses them when they expire; one that cannot renew stops
// the work before its lease can expire.
package leader

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Store keeps the leases (postgres.DB has it). Times are the store's
// own, so that replicas with clocks apart agree on who leads.
type Store interface {
	// Lead takes the lease name for holder to last ttl (a new one, its
	// own renewed, or one expired) and reports whether holder holds it.
	Lead(ctx context.Context, name, holder string, ttl time.Duration) (bool, error)
	// Resign gives up holder's lease name, if it holds it, and lets the
	// other replicas know.
	Resign(ctx context.Context, name, holder string) error
}

// DefaultTTL is how long a lease lasts unless renewed. A killed leader's
// work is taken over within about DefaultTTL plus a third of it.
const DefaultTTL = 15 * time.Second

// Elector runs work under leases. The zero Store means a store with one
// serve at a time (SQLite, whose file lock sees to it): that serve always
// leads.
type Elector struct {
	Store  Store
	Holder string        // this replica's id
	TTL    time.Duration // default DefaultTTL; renewed every third of it
	Logger zerolog.Logger

	mu      sync.Mutex
	leading map[string]bool
	wake    map[string]chan struct{}
}

// Run runs work(ctx) while this replica holds the lease name, until ctx
// ends; work must return soon after its ctx ends. When the lease is lost
// (another replica took it, or it could not be renewed in time) work's
// ctx is cancelled and Run waits for it, then tries for the lease again.
// When ctx ends, Run stops work, waits for it, gives the lease up, and
// returns. Several names may run on one Elector, each on its own Run.
func (e *Elector) Run(ctx context.Context, name string, work func(ctx context.Context)) {
	if e.Store == nil {
		e.set(name, true)
		work(ctx)
		e.set(name, false)
		return
	}
	ttl := e.TTL
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	every := ttl / 3
	wake := e.wakeChan(name)
	log := e.Logger.With().Str("lease", name).Str("replica", e.Holder).Logger()

	var cur *job // the work, while leading
	end := func() {
		e.set(name, false)
		cur.stop()
		<-cur.done
		cur = nil
	}
	// While leading, expire fires when the lease may be about to pass
	// without a renewal that went through: half a renewal interval before
	// ttl has run from when the last successful Lead was sent (the store
	// counts from when it ran it, later).
	expire := time.NewTimer(time.Hour)
	expire.Stop()
	defer expire.Stop()
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		sent := time.Now()
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), every)
		ok, err := e.Store.Lead(cctx, name, e.Holder, ttl)
		cancel()
		if ctx.Err() != nil {
			break
		}
		switch {
		case err != nil && cur != nil:
			log.Warn().Err(err).Msg("renewing the leader lease failed; trying again")
		case err != nil:
			log.Debug().Err(err).Msg("could not try for the leader lease")
		case ok:
			expire.Reset(time.Until(sent.Add(ttl - every/2)))
			if cur == nil {
				cur = start(ctx, work)
				e.set(name, true)
				log.Info().Msg("leading: running this lease's work here")
			}
		case cur != nil:
			expire.Stop()
			end()
			log.Warn().Msg("the leader lease was taken over: stopped its work here")
		}
		select {
		case <-ctx.Done():
		case <-ticker.C:
		case <-wake:
		case <-expire.C:
			if cur != nil {
				end()
				log.Warn().Msg("could not renew the leader lease in time: stopped its work so that another replica may take it")
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	if cur != nil {
		end()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		if err := e.Store.Resign(rctx, name, e.Holder); err != nil {
			log.Warn().Err(err).Msg("could not give the leader lease up: another replica takes it once it expires")
		} else {
			log.Info().Msg("gave the leader lease up")
		}
		cancel()
	}
}

// job is work running under a lease.
type job struct {
	stop context.CancelFunc
	done chan struct{}
}

func start(ctx context.Context, work func(context.Context)) *job {
	ctx, stop := context.WithCancel(ctx)
	j := &job{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(j.done)
		work(ctx)
	}()
	return j
}

// Leader reports whether this replica holds the lease name and runs its
// work now.
func (e *Elector) Leader(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leading[name]
}

// Wake makes the Run of name try for its lease now (another replica gave
// it up). It never blocks.
func (e *Elector) Wake(name string) {
	select {
	case e.wakeChan(name) <- struct{}{}:
	default:
	}
}

func (e *Elector) set(name string, on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.leading == nil {
		e.leading = map[string]bool{}
	}
	e.leading[name] = on
}

func (e *Elector) wakeChan(name string) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.wake == nil {
		e.wake = map[string]chan struct{}{}
	}
	c, ok := e.wake[name]
	if !ok {
		c = make(chan struct{}, 1)
		e.wake[name] = c
	}
	return c
}
