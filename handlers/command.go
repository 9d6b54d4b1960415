package handlers

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

const (
	// killGrace is how long a timed-out or canceled command's process group has between
	// SIGTERM and SIGKILL; it also bounds how long a leftover process holding the output
	// pipe can keep an attempt open.
	killGrace = 2 * time.Second
	// outputHead and outputTail are the bytes of combined stdout+stderr kept from each end.
	outputHead = 2 << 10
	outputTail = 2 << 10
	// defaultPath is the child's PATH when the parent has none.
	defaultPath = "/usr/local/bin:/usr/bin:/bin"
	// exTempFail is sysexits.h EX_TEMPFAIL: the command asks to be tried again later.
	exTempFail = 75
	// exDataErr is sysexits.h EX_DATAERR: the command says this event can never
	// succeed, so retrying it is pointless.
	exDataErr = 65
)

// Command delivers by running a local program from an argv, never through a shell,
// with the payload on stdin. It is safe for concurrent use.
//
// The program runs in its own process group with a small fixed environment. When an
// attempt ends, by exit, timeout or cancel, whatever is left of that group is killed:
// a program that must outlive its attempt has to start its own session (setsid).
type Command struct {
	argv    []string
	env     map[string]string
	timeout time.Duration
	path    string // the child's PATH, also used to resolve a bare argv[0]
	home    string
}

// NewCommand returns a target that runs argv with env added to its environment, each
// attempt bounded by timeout (DefaultTimeout if timeout <= 0). PATH and HOME are taken
// from the parent's environment now; env may override them. An empty argv is not
// reported here but by every Deliver and Run, as an *Error.
func NewCommand(argv []string, env map[string]string, timeout time.Duration) *Command {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	c := &Command{
		argv:    slices.Clone(argv),
		env:     make(map[string]string, len(env)),
		timeout: timeout,
		path:    os.Getenv("PATH"),
		home:    os.Getenv("HOME"),
	}
	maps.Copy(c.env, env)
	if p, ok := c.env["PATH"]; ok {
		c.path = p
	}
	if c.path == "" {
		c.path = defaultPath
	}
	return c
}

// Deliver runs the command with d.Body on stdin and HOOKBOX_EVENT_ID, HOOKBOX_SOURCE,
// HOOKBOX_EVENT_TYPE, HOOKBOX_ATTEMPT and HOOKBOX_RECEIVED_AT (and HOOKBOX_REFETCHED for
// a refetched body) in its environment. Exit
// status 0 is success. Any other exit, a timeout, a canceled ctx, or a command that
// cannot start returns a non-nil *Error; only exit 65 (EX_DATAERR) is Permanent.
func (c *Command) Deliver(ctx context.Context, d Delivery) (Result, error) {
	// Set after the target's env, so a target cannot mask what hookbox promises the program.
	vars := []string{
		"HOOKBOX_EVENT_ID", d.EventID,
		"HOOKBOX_SOURCE", d.Source,
		"HOOKBOX_EVENT_TYPE", d.Type,
		"HOOKBOX_ATTEMPT", strconv.Itoa(d.Attempt),
		"HOOKBOX_RECEIVED_AT", d.ReceivedAt.UTC().Format(time.RFC3339Nano),
	}
	if d.Refetched != "" {
		vars = append(vars, "HOOKBOX_REFETCHED", d.Refetched)
	}
	return c.run(ctx, vars, d.Body)
}

// Run runs the command with stdin and env added to its environment (after the target's
// own env) under the same process rules as Deliver, and returns the same kinds of *Error.
func (c *Command) Run(ctx context.Context, env map[string]string, stdin []byte) (Result, error) {
	vars := make([]string, 0, 2*len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		vars = append(vars, k, env[k])
	}
	return c.run(ctx, vars, stdin)
}

// run executes one attempt; vars holds name, value pairs added last to the environment.
func (c *Command) run(ctx context.Context, vars []string, stdin []byte) (Result, error) {
	res := Result{ExitCode: -1}
	if len(c.argv) == 0 || c.argv[0] == "" {
		return res, &Error{Msg: "empty command"}
	}
	environ, err := c.environ(vars)
	if err != nil {
		return res, &Error{Msg: err.Error(), Err: err}
	}
	path, err := c.lookPath()
	if err != nil {
		return res, &Error{Msg: err.Error(), Err: err}
	}

	runCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, path, c.argv[1:]...)
	cmd.Args[0] = c.argv[0]
	cmd.Env = environ
	cmd.Stdin = bytes.NewReader(stdin)
	out := newHeadTail(outputHead, outputTail)
	// One writer for both means os/exec hands the child a single pipe, so stdout and
	// stderr interleave in the order the program wrote them.
	cmd.Stdout, cmd.Stderr = out, out
	setProcessGroup(cmd)
	var interrupted atomic.Bool
	cmd.Cancel = func() error {
		interrupted.Store(true)
		return terminateGroup(cmd.Process)
	}
	// After the grace os/exec kills the leader and closes our pipe ends, so a grandchild
	// that ignores SIGTERM and holds stdout cannot keep the worker waiting.
	cmd.WaitDelay = killGrace

	start := time.Now()
	if err := cmd.Start(); err != nil {
		res.Duration = time.Since(start)
		if ctx.Err() != nil {
			return res, &Error{Msg: "canceled", Err: ctx.Err()}
		}
		return res, startError(c.argv[0], err)
	}
	waitErr := cmd.Wait()
	// The leader is gone; anything it left in its group (a background child, a child of
	// a child) is killed now, so no process outlives its attempt.
	killGroup(cmd.Process)
	res.Duration = time.Since(start)
	res.Output = out.String()
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}

	if interrupted.Load() {
		if ctx.Err() != nil {
			return res, &Error{Msg: "canceled", Err: ctx.Err()}
		}
		return res, &Error{Msg: "timeout after " + c.timeout.String(), Err: context.DeadlineExceeded}
	}
	if cmd.ProcessState == nil {
		return res, &Error{Msg: waitErr.Error(), Err: waitErr}
	}
	// exec.ErrWaitDelay after a clean exit only means a leftover process held the output
	// pipe past the grace; the program itself succeeded.
	if cmd.ProcessState.Success() {
		return res, nil
	}
	switch res.ExitCode {
	case exTempFail:
		return res, &Error{Msg: "exit status 75 (temporary failure)", Err: waitErr}
	case exDataErr:
		return res, &Error{Msg: "exit status 65 (permanent failure)", Permanent: true, Err: waitErr}
	}
	return res, &Error{Msg: cmd.ProcessState.String(), Err: waitErr}
}

// environ builds the child's whole environment: nothing is inherited but PATH and HOME.
func (c *Command) environ(vars []string) ([]string, error) {
	env := make([]string, 0, 2+len(c.env)+len(vars)/2)
	seen := make(map[string]int, cap(env))
	add := func(k, v string) error {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return errors.New("invalid environment variable name " + strconv.Quote(k))
		}
		if strings.IndexByte(v, 0) >= 0 {
			return errors.New(k + " contains a NUL byte and cannot be passed in the environment")
		}
		kv := k + "=" + v
		if i, ok := seen[k]; ok {
			env[i] = kv
			return nil
		}
		seen[k] = len(env)
		env = append(env, kv)
		return nil
	}
	if err := add("PATH", c.path); err != nil {
		return nil, err
	}
	if c.home != "" {
		if err := add("HOME", c.home); err != nil {
			return nil, err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.env)) {
		if err := add(k, c.env[k]); err != nil {
			return nil, err
		}
	}
	for i := 0; i+1 < len(vars); i += 2 {
		if err := add(vars[i], vars[i+1]); err != nil {
			return nil, err
		}
	}
	return env, nil
}

// lookPath resolves a bare program name against the child's PATH rather than the
// parent's, skipping relative entries so a working directory cannot supply the program.
func (c *Command) lookPath() (string, error) {
	name := c.argv[0]
	if strings.ContainsRune(name, filepath.Separator) || strings.ContainsRune(name, '/') {
		return name, nil
	}
	for _, dir := range filepath.SplitList(c.path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: errors.New("command not found in PATH " + strconv.Quote(c.path))}
}

// Program is the file the command would run, looked for as a run looks
// for it (a bare name in the child's PATH), or why there is none.
func (c *Command) Program() (string, error) {
	if len(c.argv) == 0 || c.argv[0] == "" {
		return "", errors.New("no program")
	}
	return c.lookPath()
}

func startError(name string, err error) *Error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &Error{Msg: "command not found: " + name, Err: err}
	case errors.Is(err, fs.ErrPermission):
		return &Error{Msg: "command not executable: " + name, Err: err}
	}
	return &Error{Msg: "start " + name + ": " + err.Error(), Err: err}
}
