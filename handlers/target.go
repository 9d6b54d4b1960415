package handlers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"

	"hookbox/config"
	"hookbox/provider"
	"hookbox/queue"
)

// Targets turns cfg's [[target]] into the queue's targets. A command
// target's environment also names the target and the store
// (HOOKBOX_TARGET, HOOKBOX_STORE=store, from store.RealPath): that is how a
// restarted hookbox finds the processes of attempts its killed predecessor
// left running (StopRunningLeftovers). It fails for a target with neither a
// url nor a command, which a validated config never has.
func Targets(cfg config.Config, store string) ([]queue.Target, error) {
	return TargetsWith(cfg, store, Options{})
}

// TargetsWith is Targets, with what the targets with refetch need and the
// serve replica's name (o). It also fails for a refetch its Set cannot
// build.
func TargetsWith(cfg config.Config, store string, o Options) ([]queue.Target, error) {
	out := make([]queue.Target, 0, len(cfg.Targets))
	for _, t := range cfg.Targets {
		rf, err := newRefetcher(cfg, t, o)
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", t.Name, err)
		}
		var h queue.Handler
		switch {
		case t.URL != "":
			u := NewURL(t.URL, t.Timeout.D(), t.PermanentStatus...)
			if len(t.SignSecrets) > 0 {
				s, err := provider.NewStandardSigner(t.SignSecrets)
				if err != nil {
					return nil, fmt.Errorf("target %s: sign_secret_env: %w", t.Name, err)
				}
				u.SignWith(t.Name, s)
			}
			h = handle(u, false, rf)
		case len(t.Command) > 0:
			env := maps.Clone(t.Env)
			if env == nil {
				env = make(map[string]string, 2)
			}
			env["HOOKBOX_TARGET"], env["HOOKBOX_STORE"] = t.Name, store
			if o.Replica != "" {
				env["HOOKBOX_REPLICA"] = o.Replica
			}
			h = handle(NewCommand(t.Command, env, t.Timeout.D()), true, rf)
		default:
			return nil, fmt.Errorf("target %s: neither url nor command", t.Name)
		}
		out = append(out, queue.Target{Name: t.Name, MaxAttempts: t.MaxAttempts, Handler: h,
			Rate: t.Rate.PerSecond(), Concurrency: t.Concurrency})
	}
	return out, nil
}

// deliverer is what both target kinds offer.
type deliverer interface {
	Deliver(ctx context.Context, d Delivery) (Result, error)
}

// handle adapts a target to the queue's Handler. A Permanent *Error becomes a
// queue.PermanentError, which the pool puts dead at once; every other failure
// is left for the pool to retry. With rf, each attempt first fetches the
// resource, and a failed fetch is the attempt's failure.
func handle(d deliverer, command bool, rf *refetcher) queue.Handler {
	return queue.HandlerFunc(func(ctx context.Context, j *queue.Job) queue.Outcome {
		del := Delivery{
			EventID:     j.EventID,
			Source:      j.Source,
			Type:        j.Type,
			Attempt:     j.Attempt,
			ReceivedAt:  j.ReceivedAt,
			ContentType: j.ContentType,
			Body:        j.Body,
		}
		if rf != nil {
			if out, failed := rf.fetch(ctx, j, &del); failed {
				return out
			}
		}
		res, err := d.Deliver(ctx, del)
		out := queue.Outcome{Err: err, HTTPStatus: res.Status, Output: res.Output}
		if command && res.ExitCode >= 0 {
			// -1: killed (a timeout) or never started; the error says
			// which, and there is no exit code to show.
			code := res.ExitCode
			out.ExitCode = &code
		}
		var he *Error
		if errors.As(err, &he) {
			out.RetryAfter = he.RetryAfter
			if he.Permanent {
				reason := "status " + strconv.Itoa(res.Status)
				if command {
					reason = "exit " + strconv.Itoa(res.ExitCode)
				}
				out.Err = queue.Permanent(reason, err)
			}
		}
		return out
	})
}
