package queue

import (
	"context"
	"time"
)

// admit lets through the claimed jobs whose target is neither paused nor
// out of tokens or slots, and returns them. The others go back to the
// store without an attempt spent, in one write each way: a paused
// target's to wait paused (the store keeps them so), a throttled one's
// deferred to their expected turn. Only the dispatcher calls it.
func (p *Pool) admit(jobs []*Job) []*Job {
	paused := *p.paused.Load()
	now := p.cfg.Now()
	run := jobs[:0]
	var held, deferred []*Job
	var until []time.Time
	throttled := map[string]map[string]int{}
	for _, j := range jobs {
		if paused[j.Target] {
			held = append(held, j)
			continue
		}
		l := p.limits[j.Target]
		if l == nil {
			run = append(run, j)
			continue
		}
		ok, at, reason := l.admit(now)
		if ok {
			if l.conc > 0 {
				j.limit = l
			}
			run = append(run, j)
			continue
		}
		deferred, until = append(deferred, j), append(until, at)
		if throttled[j.Target] == nil {
			throttled[j.Target] = map[string]int{}
		}
		throttled[j.Target][reason]++
	}
	p.unclaim(held)
	if len(deferred) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := p.s.Defer(ctx, deferred, until); err != nil {
			p.log.Error().Err(err).Int("deliveries", len(deferred)).Msg("could not defer throttled jobs; they run again once their lease passes")
		}
		cancel()
		for _, j := range deferred {
			p.finished(j.Delivery)
		}
		if p.cfg.OnThrottled != nil {
			for target, reasons := range throttled {
				for reason, n := range reasons {
					p.cfg.OnThrottled(target, reason, n)
				}
			}
		}
	}
	return run
}

// releaseSlot gives back the concurrency slot j holds, once its attempt
// took d (d < 0: it never ran).
func (p *Pool) releaseSlot(j *Job, d time.Duration) {
	if j.limit != nil {
		j.limit.release(d)
		j.limit = nil
	}
}

// isPaused reports whether target was paused when the pool last looked.
func (p *Pool) isPaused(target string) bool { return (*p.paused.Load())[target] }

func (p *Pool) anyPaused() bool { return len(*p.paused.Load()) > 0 }

// readPaused reads the paused targets and returns them.
func (p *Pool) readPaused(ctx context.Context) ([]PausedTarget, error) {
	list, err := p.s.Paused(ctx)
	if err != nil {
		return nil, err
	}
	m := make(map[string]bool, len(list))
	for _, t := range list {
		m[t.Name] = true
	}
	p.paused.Store(&m)
	return list, nil
}

// warnPaused names, at the start, each configured target a pause holds:
// a pause outlives the process, and one forgotten after the maintenance
// would otherwise hold its deliveries unnoticed.
func (p *Pool) warnPaused(list []PausedTarget) {
	for _, t := range list {
		if _, ok := p.targets[t.Name]; ok {
			p.log.Warn().Str("target", t.Name).Time("since", t.Since).
				Msg("target is paused: its deliveries wait, spending no attempts, until hookbox resume " + t.Name)
		}
	}
}

// watchPaused reads the paused targets every PausedEvery until ctx ends,
// so that a pause made by another process (hookbox pause, the API of
// another replica) stops this pool's claimed jobs from starting within
// that time. The deliveries still queued are held by the store at once.
func (p *Pool) watchPaused(ctx context.Context) {
	defer p.pausing.Done()
	ticker := time.NewTicker(p.cfg.PausedEvery)
	defer ticker.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		_, err := p.readPaused(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			p.log.Error().Err(err).Msg("reading the paused targets failed; retrying every second, with the last ones read")
			failing = true
		case err == nil && failing:
			p.log.Info().Msg("reading the paused targets works again")
			failing = false
		}
	}
}
