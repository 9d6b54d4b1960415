package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"hookbox/config"
	"hookbox/fire"
	"hookbox/handlers"
	"hookbox/internal/cli"
	"hookbox/internal/logging"
	"hookbox/provider"
)

const fireSummary = "send signed test webhooks to an endpoint in the scenarios that break handlers, and report what it did"

// FireCommand is `hookbox fire`: its flags make a fire.Runner, which does
// the work.
type FireCommand struct{ cli.Env }

// maxEventFile bounds --event: the receiver's default body limit.
const maxEventFile = 1 << 20

func (c *FireCommand) Run(ctx context.Context, args []string) error {
	fs := cli.NewFlagSet(c.Env, "fire", "URL", fireSummary)
	preset := fs.String("preset", "", "sign as this `PRESET` (hookbox presets lists them)")
	secretEnv := fs.String("secret-env", "", "the environment `VAR` holding the secret to sign with (discord, sendgrid: the private key)")
	cfgPath := fs.String("config", "", "with --source: the config `FILE` whose source to sign as (default $HOOKBOX_CONFIG)")
	source := fs.String("source", "", "sign as this configured `SOURCE`: its scheme, secret and settings")
	scenarios := fs.String("scenario", "all", "`LIST` of scenarios, comma-separated: dup-seq, dup-par, lost-response, timeout, out-of-order, storm, or all")
	n := fs.Int("n", 20, fmt.Sprintf("dup-par: `N` copies at one instant (2 to %d)", fire.MaxN))
	speed := fs.Float64("speed", 0, fmt.Sprintf("storm: run the provider's retry schedule `X` times faster (0: fit it into %s)", fire.StormBudget))
	timeout := fs.Duration("timeout", 0, "wait `D` for an answer (default: the provider's own timeout, else 10s)")
	wait := fs.Duration("wait", 10*time.Second, "watch the probe up to `D` for a scenario's effects")
	eventFile := fs.String("event", "", "send this body `FILE` instead of the preset's sample, with {{id}}, {{resource}}, {{version}}, {{now}}, ... filled in")
	eventType := fs.String("type", "", "send the preset's sample of this event `TYPE` (default its first)")
	probeURL := fs.String("probe-url", "", "count the handler's side effects: GET `URL`?event_id=…&resource_id=… answers N or {\"count\":N,\"version\":V}")
	probeCmd := fs.String("probe-cmd", "", "count them with this `COMMAND` (words, or a JSON array), run with HOOKBOX_EVENT_ID and HOOKBOX_RESOURCE_ID; it prints N or the JSON")
	asJSON := fs.Bool("json", false, "one JSON object a scenario")
	junit := fs.String("junit", "", "also write a JUnit XML report to `FILE`, a test case a scenario")
	yes := fs.Bool("yes", false, "send to a URL that is not loopback (real requests to someone's service)")
	fs.Explain(`Scenarios (each with fresh event ids and a fresh resource id):
  dup-seq        the same event twice in a row
  dup-par        the same event N times at one instant
  lost-response  the event, its connection dropped before the answer is read, then again
  timeout        the event, waited for as long as the provider waits; if later, again
  out-of-order   two events of one resource, the newer version first
  storm          the event on the provider's retry schedule, compressed

Results: ok (the effect ran once, the newest version won), DOUBLE (more
than once), LOST (never), STALE (the older version won), FAIL (an answer
due was not a 2xx in time), acked (answered, effects not counted: no
probe), skip. Exit 1 on DOUBLE, LOST, STALE or FAIL.

Only URL (and the probe's URL) is contacted; a URL beyond loopback needs --yes.`)
	if err := fs.Parse(args, 1); err != nil {
		return err
	}
	list, err := fire.ParseScenarios(*scenarios)
	if err != nil {
		return cli.Usagef("fire: --scenario: %v", err)
	}
	target := fs.Arg(0)
	if err := checkTarget(target, *yes); err != nil {
		return err
	}
	p, o, err := c.signAs(*preset, *secretEnv, *cfgPath, *source)
	if err != nil {
		return err
	}
	signer, err := provider.NewSigner(o)
	if err != nil {
		if p.SenderKey != "" {
			return cli.Usagef("fire: %v (%s signs with a private key: give it with --secret-env)", err, p.Name)
		}
		return cli.Usagef("fire: %v", err)
	}
	r := &fire.Runner{URL: target, Provider: p, Options: o, Signer: signer, N: *n, Speed: *speed, Wait: *wait, Timeout: *timeout}
	if r.Timeout == 0 {
		r.Timeout = p.TimeoutOr()
	}
	if r.Sample, r.Template, err = pickEvent(p, *eventType, *eventFile); err != nil {
		return err
	}
	if r.Probe, err = c.probe(*probeURL, *probeCmd); err != nil {
		return err
	}
	if err := r.Validate(); err != nil {
		return cli.Usagef("fire: %v", err)
	}
	if f, ok := c.Stderr.(*os.File); ok && logging.IsTerminal(f) {
		r.Progress = func(line string) { fmt.Fprintf(c.Stderr, "\r\x1b[K%s", cli.Printable(line)) }
	}
	if !*asJSON {
		c.header(r, *probeURL, *probeCmd)
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	results, runErr := r.Run(ctx, list)
	if r.Progress != nil {
		fmt.Fprint(c.Stderr, "\r\x1b[K")
	}
	if *asJSON {
		err = fire.WriteJSON(c.Stdout, results)
	} else {
		err = fire.WriteTable(c.Stdout, results)
	}
	if err != nil {
		return err
	}
	if *junit != "" {
		if err := writeJUnit(*junit, p.Name, target, results); err != nil {
			return err
		}
	}
	if runErr != nil {
		return fmt.Errorf("fire: %w", runErr)
	}
	var failed []string
	for _, res := range results {
		if fire.Failed(res.Verdict) {
			failed = append(failed, res.Scenario+" "+res.Verdict)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("fire: %d of %d scenarios failed: %s", len(failed), len(results), strings.Join(failed, ", "))
	}
	return nil
}

// checkTarget refuses a URL that is no absolute http(s) URL, and one
// beyond loopback without yes.
func checkTarget(target string, yes bool) error {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return cli.Usagef("fire: URL %q: want an absolute http or https URL", target)
	}
	if !yes && !loopback(u.Hostname()) {
		return cli.Usagef("fire: %s is not a loopback address: fire sends real, signed requests, many at once; pass --yes if the endpoint is yours to test", u.Host)
	}
	return nil
}

// loopback reports whether host is localhost or a loopback IP; a name is
// not looked up.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// signAs is the provider and the options to sign with: a preset and the
// secret in an environment variable, or a configured source (whose secret
// --secret-env replaces).
func (c *FireCommand) signAs(preset, secretEnv, cfgPath, source string) (provider.Provider, provider.Options, error) {
	var none provider.Provider
	secret := func() (string, error) {
		v := c.Getenv(secretEnv)
		if v == "" {
			return "", cli.Usagef("fire: --secret-env %s: the variable is not set or empty", secretEnv)
		}
		return v, nil
	}
	switch {
	case preset != "" && (source != "" || cfgPath != ""):
		return none, provider.Options{}, cli.Usagef("fire: give --preset, or --config and --source, not both")
	case preset != "":
		p, ok := provider.Lookup(preset)
		if !ok {
			return none, provider.Options{}, cli.Usagef("fire: --preset %q: unknown (one of %s)", preset, strings.Join(provider.Names(), ", "))
		}
		if p.Header != "" {
			return none, provider.Options{}, cli.Usagef("fire: %s takes its header and settings from a source: give --config F --source S", preset)
		}
		o := provider.Options{Scheme: p.Name}
		if !p.Unsigned {
			if secretEnv == "" {
				return none, provider.Options{}, cli.Usagef("fire: --preset %s needs --secret-env VARIABLE, the secret to sign with", preset)
			}
			s, err := secret()
			if err != nil {
				return none, provider.Options{}, err
			}
			o.Secrets = []string{s}
		}
		return p, o, nil
	case source == "":
		return none, provider.Options{}, cli.Usagef("fire: give --preset P --secret-env E, or --config F --source S")
	}
	path := c.ConfigPath(cfgPath)
	if path == "" {
		return none, provider.Options{}, cli.Usagef("fire: --source needs --config FILE (or $HOOKBOX_CONFIG)")
	}
	// A --secret-env replaces the source's secret, so the service's
	// environment is not needed then.
	var cfg config.Config
	var err error
	if secretEnv != "" {
		cfg, err = config.LoadWithoutSecrets(path)
	} else {
		cfg, err = config.Load(path, c.Getenv)
	}
	if err != nil {
		return none, provider.Options{}, err
	}
	i := slices.IndexFunc(cfg.Sources, func(s config.Source) bool { return s.Name == source })
	if i < 0 {
		names := make([]string, len(cfg.Sources))
		for j, s := range cfg.Sources {
			names[j] = s.Name
		}
		return none, provider.Options{}, cli.Usagef("fire: %s has no source %q (its sources: %s)", path, source, strings.Join(names, ", "))
	}
	o := cfg.Sources[i].ProviderOptions()
	p, _ := provider.Lookup(o.Scheme) // the config checked it
	if secretEnv != "" {
		s, err := secret()
		if err != nil {
			return none, provider.Options{}, err
		}
		o.Secrets = []string{s}
	}
	return p, o, nil
}

// pickEvent is the sample sent (its type's, else the preset's first) and
// its template (a file of one's own, else the sample's body).
func pickEvent(p provider.Provider, typ, file string) (provider.Sample, []byte, error) {
	s := p.Samples[0]
	if typ != "" {
		i := slices.IndexFunc(p.Samples, func(s provider.Sample) bool { return s.Type == typ })
		if i < 0 {
			var types []string
			for _, s := range p.Samples {
				if s.Type != "" {
					types = append(types, s.Type)
				}
			}
			return s, nil, cli.Usagef("fire: --type %q: %s has no sample of it (samples: %s; or give your own with --event)", typ, p.Name, cli.OrDash(strings.Join(types, ", ")))
		}
		s = p.Samples[i]
	}
	if file == "" {
		return s, s.Body(), nil
	}
	f, err := os.Open(file)
	if err != nil {
		return s, nil, fmt.Errorf("fire: --event: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxEventFile+1))
	if err != nil {
		return s, nil, fmt.Errorf("fire: --event: %w", err)
	}
	if len(b) > maxEventFile {
		return s, nil, cli.Usagef("fire: --event %s: over %d bytes", file, maxEventFile)
	}
	return s, b, nil
}

// probeTimeout bounds one run of a probe command.
const probeTimeout = 10 * time.Second

// probe is the Prober the flags name, or nil.
func (c *FireCommand) probe(probeURL, probeCmd string) (fire.Prober, error) {
	switch {
	case probeURL != "" && probeCmd != "":
		return nil, cli.Usagef("fire: give --probe-url or --probe-cmd, not both")
	case probeURL != "":
		p, err := fire.NewURLProbe(probeURL)
		if err != nil {
			return nil, cli.Usagef("fire: --probe-url: %v", err)
		}
		return p, nil
	case probeCmd != "":
		argv, err := parseArgv(probeCmd)
		if err != nil {
			return nil, cli.Usagef("fire: --probe-cmd: %v", err)
		}
		return commandProbe{handlers.NewCommand(argv, nil, probeTimeout)}, nil
	}
	return nil, nil
}

// parseArgv reads a command: a JSON array of strings, as a config's
// command is written, or words separated by spaces (no quoting: a
// command with spaces in an argument is a JSON array, or a script).
func parseArgv(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	var argv []string
	if strings.HasPrefix(s, "[") {
		if err := json.Unmarshal([]byte(s), &argv); err != nil {
			return nil, errors.New("not a JSON array of strings")
		}
	} else {
		argv = strings.Fields(s)
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("no command")
	}
	return argv, nil
}

// commandProbe runs a command, as hookbox runs a command target (its own
// process group, PATH and HOME only, a timeout, bounded output), with
// HOOKBOX_EVENT_ID and HOOKBOX_RESOURCE_ID set; the last line it prints
// is the count.
type commandProbe struct{ cmd *handlers.Command }

func (p commandProbe) Count(ctx context.Context, eventID, resourceID string) (fire.Count, error) {
	res, err := p.cmd.Run(ctx, map[string]string{"HOOKBOX_EVENT_ID": eventID, "HOOKBOX_RESOURCE_ID": resourceID}, nil)
	out := strings.TrimSpace(res.Output)
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	if err != nil {
		return fire.Count{}, fmt.Errorf("probe command: %v (last output: %q)", err, cli.Printable(out))
	}
	n, err := fire.ParseCount(out)
	if err != nil {
		return fire.Count{}, fmt.Errorf("probe command: %w", err)
	}
	return n, nil
}

// header says what is about to be sent where.
func (c *FireCommand) header(r *fire.Runner, probeURL, probeCmd string) {
	timeoutFrom := "the provider's"
	switch {
	case r.Timeout != r.Provider.TimeoutOr():
		timeoutFrom = "--timeout"
	case r.Provider.Timeout == 0:
		timeoutFrom = "the default: " + r.Provider.Name + "'s is " + r.Provider.TimeoutNote
	case r.Provider.TimeoutNote != "":
		timeoutFrom = r.Provider.TimeoutNote
	}
	probe := "none (effects not counted: give --probe-url or --probe-cmd)"
	switch {
	case probeURL != "":
		probe = probeURL
	case probeCmd != "":
		probe = probeCmd
	}
	fmt.Fprintf(c.Stdout, "hookbox fire: %s to %s\n  answers waited for %s (%s)\n  probe: %s\n",
		r.Provider.Name, r.URL, r.Timeout, timeoutFrom, cli.Printable(probe))
	if k := r.Signer.PublicKey(); k != "" {
		fmt.Fprintf(c.Stdout, "  signed with the private key whose public key is %s: the endpoint must verify with it\n", k)
	}
	fmt.Fprintln(c.Stdout)
}

// writeJUnit writes the JUnit report to path.
func writeJUnit(path, preset, target string, results []fire.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("fire: --junit: %w", err)
	}
	err = fire.WriteJUnit(f, "hookbox fire "+preset+" "+target, "hookbox.fire."+preset, results)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fire: --junit: %w", err)
	}
	return nil
}
