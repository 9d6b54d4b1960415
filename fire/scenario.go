package fire

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// run runs one scenario. Each has fresh event ids and a fresh resource.
func (r *Runner) run(ctx context.Context, name string) (Result, error) {
	switch name {
	case DupSeq:
		return r.dupSeq(ctx)
	case DupPar:
		return r.dupPar(ctx)
	case LostResponse:
		return r.lostResponse(ctx)
	case Timeout:
		return r.timeout(ctx)
	case OutOfOrder:
		return r.outOfOrder(ctx)
	case Storm:
		return r.storm(ctx)
	}
	return Result{}, fmt.Errorf("unknown scenario %q", name)
}

// how a request is sent.
type how int

const (
	answered how = iota // the answer is waited for
	dropped             // the connection is reset as the answer starts
)

// attempt sends attempt n of event events[i], signed now, and returns its
// answer.
func (r *Runner) attempt(ctx context.Context, events []*event, i, n int, h how) (Answer, error) {
	w, err := r.request(events[i], n, r.now())
	if err != nil {
		return Answer{}, err
	}
	var a Answer
	events[i].sending(time.Now())
	if h == dropped {
		a = sendAndDrop(ctx, w, r.Timeout)
	} else {
		a = send(ctx, w, r.Timeout)
	}
	a.Event, a.Attempt, a.Due = i, n, h == answered
	return a, nil
}

// dupSeq: the same event twice in a row, the second as the provider's
// retry of the first.
func (r *Runner) dupSeq(ctx context.Context) (Result, error) {
	events := []*event{r.newEvent(r.now())}
	var answers []Answer
	for n := 1; n <= 2; n++ {
		r.progress("%s: sending %d of 2", DupSeq, n)
		a, err := r.attempt(ctx, events, 0, n, answered)
		if err != nil {
			return Result{}, err
		}
		answers = append(answers, a)
	}
	return r.judge(ctx, events, answers, false)
}

// dupPar: the same event N times at one instant (sendTogether).
func (r *Runner) dupPar(ctx context.Context) (Result, error) {
	events := []*event{r.newEvent(r.now())}
	w, err := r.request(events[0], 1, r.now())
	if err != nil {
		return Result{}, err
	}
	r.progress("%s: opening %d connections, then releasing their last bytes together", DupPar, r.N)
	events[0].sending(time.Now())
	answers := sendTogether(ctx, w, r.N, r.Timeout)
	for i := range answers {
		answers[i].Attempt, answers[i].Due = 1, true
	}
	return r.judge(ctx, events, answers, false)
}

// lostResponse: the event, its connection reset before the answer is
// read, then the event again, as the provider retries what it saw fail.
func (r *Runner) lostResponse(ctx context.Context) (Result, error) {
	events := []*event{r.newEvent(r.now())}
	r.progress("%s: sending, and dropping the answer", LostResponse)
	first, err := r.attempt(ctx, events, 0, 1, dropped)
	if err != nil {
		return Result{}, err
	}
	r.progress("%s: sending again", LostResponse)
	second, err := r.attempt(ctx, events, 0, 2, answered)
	if err != nil {
		return Result{}, err
	}
	return r.judge(ctx, events, []Answer{first, second}, false)
}

// timeout: the event, waited for as long as the provider waits; when the
// answer is later, the event again at once, as the provider retries it
// (one that does not retry counts the late answer as a failure).
func (r *Runner) timeout(ctx context.Context) (Result, error) {
	events := []*event{r.newEvent(r.now())}
	r.progress("%s: sending, waiting up to %s", Timeout, r.Timeout)
	first, err := r.attempt(ctx, events, 0, 1, answered)
	if err != nil {
		return Result{}, err
	}
	answers := []Answer{first}
	if !first.TimedOut || len(r.Provider.Retries.Delays) == 0 {
		return r.judge(ctx, events, answers, first.TimedOut)
	}
	answers[0].Due = false
	r.progress("%s: no answer within %s: sending again", Timeout, r.Timeout)
	second, err := r.attempt(ctx, events, 0, 2, answered)
	if err != nil {
		return Result{}, err
	}
	return r.judge(ctx, events, append(answers, second), true)
}

// outOfOrder: two events of one resource, the newer first; the older a
// moment later, once the newer's effect has shown (with a probe).
func (r *Runner) outOfOrder(ctx context.Context) (Result, error) {
	now := r.now()
	newer := r.newEvent(now)
	older := r.sibling(newer, now.Add(-time.Minute))
	events := []*event{newer, older}
	r.progress("%s: sending the newer version", OutOfOrder)
	a, err := r.attempt(ctx, events, 0, 1, answered)
	if err != nil {
		return Result{}, err
	}
	answers := []Answer{a}
	if r.Probe != nil {
		r.progress("%s: waiting for the newer version's effect", OutOfOrder)
		if err := r.watchFor(ctx, newer); err != nil && !errors.Is(err, errNoEffect) {
			return r.probeFailed(events, answers, err), nil
		}
	} else if err := sleep(ctx, 500*time.Millisecond); err != nil {
		return Result{}, err
	}
	if err := sleep(ctx, 100*time.Millisecond); err != nil {
		return Result{}, err
	}
	r.progress("%s: sending the older version", OutOfOrder)
	b, err := r.attempt(ctx, events, 1, 1, answered)
	if err != nil {
		return Result{}, err
	}
	return r.judge(ctx, events, append(answers, b), false)
}

// storm: the event on the provider's whole retry schedule, compressed.
// Every attempt is sent, as a provider sends them when its answers are
// lost or late, and each must be acknowledged.
func (r *Runner) storm(ctx context.Context) (Result, error) {
	delays := r.Provider.Retries.Delays
	if len(delays) == 0 {
		return Result{Verdict: Skip, Detail: "the provider does not retry (" + r.Provider.Retries.Note + ")"}, nil
	}
	speed := r.stormSpeed()
	events := []*event{r.newEvent(r.now())}
	start := time.Now()
	offset := time.Duration(0)
	var answers []Answer
	for n := 1; n <= len(delays)+1; n++ {
		if n > 1 {
			offset += time.Duration(float64(delays[n-2]) / speed)
		}
		if err := r.pause(ctx, time.Until(start.Add(offset)), events); err != nil {
			return Result{}, err
		}
		r.progress("%s: attempt %d of %d (%s's schedule, %.0f× faster)", Storm, n, len(delays)+1, r.Provider.Name, speed)
		a, err := r.attempt(ctx, events, 0, n, answered)
		if err != nil {
			return Result{}, err
		}
		answers = append(answers, a)
	}
	return r.judge(ctx, events, answers, slices.ContainsFunc(answers, func(a Answer) bool { return a.TimedOut }))
}

// stormSpeed is Speed, or the factor that fits the schedule into
// StormBudget.
func (r *Runner) stormSpeed() float64 {
	if r.Speed > 0 {
		return r.Speed
	}
	return max(1, float64(r.Provider.Retries.Total())/float64(StormBudget))
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// judge counts the scenario's effects, if there is a probe, and gives the
// verdict.
func (r *Runner) judge(ctx context.Context, events []*event, answers []Answer, timedOut bool) (Result, error) {
	if r.Probe == nil {
		return r.verdict(events, answers, nil, nil), nil
	}
	r.progress("watching the probe for up to %s", r.Wait)
	c, err := r.watch(ctx, events, r.settle(timedOut))
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return r.probeFailed(events, answers, err), nil
	}
	return r.verdict(events, answers, &c, nil), nil
}

func (r *Runner) probeFailed(events []*event, answers []Answer, err error) Result {
	return r.verdict(events, answers, nil, err)
}

// verdict is the scenario's result: DOUBLE if an event's effect ran more
// than once, LOST if the newest event's never ran, STALE if the resource
// was left at the older version, FAIL if an answer due was no 2xx (or
// the probe failed); else ok when the effects were counted (and, for two
// events, the version known), acked when not (without a probe, with no
// detail: the report's header says so).
func (r *Runner) verdict(events []*event, answers []Answer, c *counted, probeErr error) Result {
	res := Result{ResourceID: events[0].resource, Answers: answers}
	res.P99, res.InTime = latency(answers, r.Timeout)
	for i, e := range events {
		er := EventResult{Version: e.at.Unix()}
		if len(e.sentAs) > 0 {
			er.ID = e.sentAs[0]
		}
		if len(e.sentAs) > 1 {
			er.SentAs = slices.Clone(e.sentAs)
		}
		if c != nil {
			n := c.effects[i]
			er.Effects = &n
		}
		res.Events = append(res.Events, er)
	}
	var found = map[string][]string{}
	add := func(verdict, format string, args ...any) {
		found[verdict] = append(found[verdict], fmt.Sprintf(format, args...))
	}
	if probeErr != nil {
		add(Fail, "%v", probeErr)
	}
	judged := c != nil
	if c != nil {
		res.Version = c.version
		for i, n := range c.effects {
			if n > 1 {
				add(Double, "the effect of event %s ran %d times", res.Events[i].ID, n)
			}
		}
		ni := newest(events)
		if c.effects[ni] == 0 {
			add(Lost, "the effect of event %s never ran (watched for %s)", res.Events[ni].ID, r.Wait)
		}
		if len(events) > 1 {
			switch w := versionOf(c.version, events); {
			case c.version == "":
				judged = false
				add("", "the probe reports no version: which event won is unknown")
			case w < 0:
				add(Fail, "the probe reports version %q, neither event's (%d, %d)", c.version, events[0].at.Unix(), events[1].at.Unix())
			case w != ni:
				add(Stale, "the older version won: the resource is at %s, the event sent last, a minute older than the one sent first", c.version)
			}
		}
	}
	var bad []string
	due := 0
	for _, a := range answers {
		if !a.Due {
			continue
		}
		due++
		if !a.OK() {
			bad = append(bad, answerText(a))
		}
	}
	if len(bad) > 0 {
		add(Fail, "%d of %d answers due were not a 2xx: %s", len(bad), due, summarize(bad))
	}
	for _, v := range []string{Double, Lost, Stale, Fail} {
		if len(found[v]) > 0 {
			res.Verdict = v
			break
		}
	}
	if res.Verdict == "" {
		res.Verdict = OK
		if !judged {
			res.Verdict = Acked
		}
	}
	var detail []string
	for _, v := range []string{Double, Lost, Stale, Fail, ""} {
		detail = append(detail, found[v]...)
	}
	res.Detail = strings.Join(detail, "; ")
	return res
}

// latency is the answers' 99th percentile (nearest rank; a dropped request
// not counted, one unanswered counting as what it waited) and whether
// every one came within timeout.
func latency(answers []Answer, timeout time.Duration) (Millis, bool) {
	var ls []time.Duration
	inTime := true
	for _, a := range answers {
		if a.Dropped {
			continue
		}
		ls = append(ls, a.Latency.D())
		if a.Status == 0 || a.Latency.D() > timeout {
			inTime = false
		}
	}
	if len(ls) == 0 {
		return 0, inTime
	}
	slices.Sort(ls)
	return Millis(ls[int(math.Ceil(0.99*float64(len(ls))))-1]), inTime
}

// answerText is an answer as the report shows it: its status, or what
// went wrong.
func answerText(a Answer) string {
	switch {
	case a.Dropped:
		return "dropped"
	case a.Status != 0:
		return fmt.Sprint(a.Status)
	case a.TimedOut:
		return "timeout"
	case a.Error != "":
		return a.Error
	}
	return "none"
}

// summarize counts repeated texts: "19×200, 1×timeout".
func summarize(texts []string) string {
	var order []string
	n := map[string]int{}
	for _, t := range texts {
		if n[t] == 0 {
			order = append(order, t)
		}
		n[t]++
	}
	parts := make([]string, len(order))
	for i, t := range order {
		if n[t] == 1 {
			parts[i] = t
		} else {
			parts[i] = fmt.Sprintf("%d×%s", n[t], t)
		}
	}
	return strings.Join(parts, ", ")
}
