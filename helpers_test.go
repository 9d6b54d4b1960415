package main_test

import (
	hookbox "hookbox"

	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/config"
	"hookbox/internal/cli"
)

// testMain is a running hookbox on 127.0.0.1:0 with its store in a temp dir.
type testMain struct {
	*hookbox.Main
	t    testing.TB
	Dir  string
	URL  string // http://127.0.0.1:port
	Logs *syncBuffer

	// AdminURL is the admin listener's (/metrics, the API): URL for the
	// local sink, which shares its listener.
	AdminURL string
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// MustRunMain starts hookbox with the given config text (without [server]
// listen or [store] path: those are set here). An empty text runs the
// no-config local sink. dir may be "" for a fresh temp dir, or an earlier
// instance's Dir to restart on the same store. Each opt runs on the Main
// before Run, e.g. to inject a clock.
func MustRunMain(tb testing.TB, cfgText, dir string, opts ...func(*hookbox.Main)) *testMain {
	tb.Helper()
	if dir == "" {
		dir = tb.TempDir()
	}
	var cfg config.Config
	local := strings.TrimSpace(cfgText) == ""
	if local {
		cfg = config.LocalSink()
	} else {
		var err error
		cfg, err = config.Parse("test.toml", []byte(cfgText), os.Getenv)
		if err != nil {
			tb.Fatalf("parse config: %v", err)
		}
	}
	cfg.Server.Listen = "127.0.0.1:0"
	if !local {
		cfg.Admin.Listen = "127.0.0.1:0"
	}
	cfg.Store.Path = filepath.Join(dir, "hookbox.db")
	logs := &syncBuffer{}
	m := hookbox.NewMain(cfg, zerolog.New(logs).Level(zerolog.DebugLevel))
	m.LocalSink = local
	for _, opt := range opts {
		opt(m)
	}
	if err := m.Run(context.Background()); err != nil {
		tb.Fatalf("run: %v", err)
	}
	tm := &testMain{Main: m, t: tb, Dir: dir, URL: "http://" + m.Addr(), AdminURL: "http://" + m.Addr(), Logs: logs}
	if a := m.AdminAddr(); a != "" {
		tm.AdminURL = "http://" + a
	}
	tb.Cleanup(func() { tm.Close() })
	return tm
}

// Post sends a webhook and returns the status and body.
func (tm *testMain) Post(path string, headers map[string]string, body []byte) (int, string) {
	tm.t.Helper()
	req, err := http.NewRequest(http.MethodPost, tm.URL+path, bytes.NewReader(body))
	if err != nil {
		tm.t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tm.t.Fatalf("post %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WithNow runs hookbox on a fixed clock.
func WithNow(now time.Time) func(*hookbox.Main) {
	return func(m *hookbox.Main) { m.Now = func() time.Time { return now } }
}

// runCLI runs a hookbox command with buffers and an empty environment.
func runCLI(tb testing.TB, args ...string) (stdout, stderr string, err error) {
	tb.Helper()
	return execute(args, func(string) string { return "" })
}

// execute runs the hookbox command line args in this process, with getenv
// as its environment.
func execute(args []string, getenv func(string) string) (stdout, stderr string, err error) {
	var out, errb bytes.Buffer
	err = hookbox.Execute(context.Background(), cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: getenv}, args)
	return out.String(), errb.String(), err
}

// storeConfig writes a config file that points the read commands at the
// store in dir, and returns its path.
func storeConfig(tb testing.TB, dir string) string {
	tb.Helper()
	p := filepath.Join(dir, "cli.toml")
	text := fmt.Sprintf("[store]\npath = %q\n", filepath.Join(dir, "hookbox.db"))
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// cliRun runs a hookbox command against dir's store, as a user would.
func cliRun(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	full := append([]string{args[0], "--config", storeConfig(tb, dir)}, args[1:]...)
	stdout, stderr, err := runCLI(tb, full...)
	if err != nil {
		tb.Fatalf("hookbox %s: %v\n%s", strings.Join(full, " "), err, stderr)
	}
	return stdout
}

// jsonLines decodes one JSON object a line.
func jsonLines[T any](tb testing.TB, out string) []T {
	tb.Helper()
	var list []T
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var v T
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			return list
		} else if err != nil {
			tb.Fatalf("decode %q: %v", out, err)
		}
		list = append(list, v)
	}
}

// pidGone reports whether pid no longer runs (gone, or a zombie nobody reaped).
func pidGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// builtProgram is a Go program built once for the tests that run it as a
// child process; TestMain removes its directory.
type builtProgram struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// The programs the root tests build: hookbox itself, and the fire tests'
// command target.
var builtBinary, builtFireTarget builtProgram

func TestMain(m *testing.M) {
	code := m.Run()
	for _, b := range []*builtProgram{&builtBinary, &builtFireTarget} {
		if b.dir != "" {
			os.RemoveAll(b.dir)
		}
	}
	os.Exit(code)
}

// build returns the program of package pkg, built as name (CGO_ENABLED=0,
// without the race detector) on first use, or skips the test when go is
// not on PATH.
func (b *builtProgram) build(tb testing.TB, pkg, name string) string {
	tb.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		tb.Skipf("go is not on PATH: cannot build %s", name)
	}
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "hookbox-"+name+"-"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, name)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, gobin, "build", "-o", b.path, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
		}
	})
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.path
}

// buildHookbox returns the real binary, building it on first use.
func buildHookbox(tb testing.TB) string {
	tb.Helper()
	return builtBinary.build(tb, ".", "hookbox")
}

// freeAddr returns a loopback address with a port that was free a moment
// ago: where nothing listens.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// serveProc is `hookbox serve` running as a child process.
type serveProc struct {
	cmd    *exec.Cmd
	addr   string
	output *syncBuffer
	exited chan struct{}
	err    error // Wait's result, set before exited is closed
}

// stop sends sig and fails the test unless serve then exits 0 within d.
func (p *serveProc) stop(tb testing.TB, sig syscall.Signal, d time.Duration) {
	tb.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		tb.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(d):
		tb.Fatalf("serve still running %v after %v\n%s", d, sig, p.output.String())
	}
	if p.err != nil {
		tb.Fatalf("serve exit after %v: %v, want 0\n%s", sig, p.err, p.output.String())
	}
}

// startServe starts bin serve --config cfg and waits until /healthz answers.
func startServe(tb testing.TB, bin, cfg, addr string) *serveProc {
	tb.Helper()
	output := &syncBuffer{}
	return launchServe(tb, addr, output, output, bin, "serve", "--config", cfg, "--log-format", "json")
}

// launchServe starts args (bin serve …) with stdout and stderr as given,
// kills it when the test ends, and waits until /healthz answers.
func launchServe(tb testing.TB, addr string, stdout *syncBuffer, stderr io.Writer, args ...string) *serveProc {
	tb.Helper()
	return launchServeIn(tb, "", addr, stdout, stderr, args...)
}

// launchServeIn is launchServe in the working directory dir ("": this one).
func launchServeIn(tb testing.TB, dir, addr string, stdout *syncBuffer, stderr io.Writer, args ...string) *serveProc {
	tb.Helper()
	return launchServeWith(tb, dir, addr, stdout, stderr, nil, args...)
}

// launchServeEnv is launchServe with env added to the environment.
func launchServeEnv(tb testing.TB, addr string, output *syncBuffer, env []string, args ...string) *serveProc {
	tb.Helper()
	return launchServeWith(tb, "", addr, output, output, env, args...)
}

func launchServeWith(tb testing.TB, dir, addr string, stdout *syncBuffer, stderr io.Writer, env []string, args ...string) *serveProc {
	tb.Helper()
	p := &serveProc{addr: addr, output: stdout, exited: make(chan struct{})}
	p.cmd = exec.Command(args[0], args[1:]...)
	p.cmd.Dir = dir
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	p.cmd.Stdout, p.cmd.Stderr = stdout, stderr
	if err := p.cmd.Start(); err != nil {
		tb.Fatalf("start serve: %v", err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	tb.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	waitFor(tb, 10*time.Second, "hookbox serve to answer /healthz", func() bool {
		select {
		case <-p.exited:
			tb.Fatalf("serve exited early: %v\n%s", p.err, p.output.String())
		default:
		}
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

// mac is the HMAC of the parts, concatenated: the one signer that every
// provider signature in these tests is built from.
func mac(fn func() hash.Hash, key []byte, parts ...string) []byte {
	m := hmac.New(fn, key)
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return m.Sum(nil)
}

// hexMAC is the hex HMAC-SHA256 of the parts under secret.
func hexMAC(secret string, parts ...string) string {
	return hex.EncodeToString(mac(sha256.New, []byte(secret), parts...))
}

// githubSig is the X-Hub-Signature-256 value GitHub sends for body.
func githubSig(secret string, body []byte) string {
	return "sha256=" + hexMAC(secret, string(body))
}

// stripeSig is the Stripe-Signature value Stripe sends for body at ts.
func stripeSig(secret string, ts time.Time, body []byte) string {
	t := strconv.FormatInt(ts.Unix(), 10)
	return "t=" + t + ",v1=" + hexMAC(secret, t, ".", string(body))
}

// writeFile writes text to path, owner-only.
func writeFile(tb testing.TB, path, text string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		tb.Fatal(err)
	}
}
