package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ReadyPrefix starts the line a bench server prints on stdout once it
// listens; the address follows.
const ReadyPrefix = "listening on http://"

// Child is a server under test running as a child process, so that its RSS
// and CPU time are its own and not the load generator's.
type Child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tailBuffer
	done   chan struct{}
	err    error
	// Addr is the loopback host:port the child listens on.
	Addr string
}

// StartChild runs argv, with env added to this process's environment, and
// waits (at most 60 s) for its ready line. The child stops when its stdin is
// closed (Stop), and so also when this process dies.
func StartChild(ctx context.Context, argv, env []string) (*Child, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	c := &Child{cmd: cmd, stderr: &tailBuffer{max: 16 << 10}, done: make(chan struct{})}
	cmd.Stderr = c.stderr
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), ReadyPrefix); ok {
				ready <- strings.TrimSpace(addr)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	t := time.NewTimer(60 * time.Second)
	defer t.Stop()
	select {
	case addr := <-ready:
		c.Addr = addr
		if err := CheckLoopback("http://" + addr); err != nil {
			c.Stop()
			return nil, err
		}
		return c, nil
	case <-c.done:
		return nil, fmt.Errorf("server exited before listening: %v: %s", c.err, c.stderr.String())
	case <-t.C:
		c.kill()
		return nil, fmt.Errorf("server printed no %q line within 60s (a hookbox server opens its store first: is that disk slow or full?); it said: %s", ReadyPrefix, c.stderr.String())
	case <-ctx.Done():
		c.kill()
		return nil, ctx.Err()
	}
}

// Pid is the child's process id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Stderr is the tail of what the child wrote on stderr.
func (c *Child) Stderr() string { return c.stderr.String() }

// Stop closes the child's stdin, which asks it to shut down cleanly, and
// waits up to 30 s before killing it.
func (c *Child) Stop() error {
	c.stdin.Close()
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		c.kill()
		return fmt.Errorf("server did not stop in 30s; killed: %s", c.stderr.String())
	}
	if c.err != nil {
		return fmt.Errorf("server: %w: %s", c.err, c.stderr.String())
	}
	return nil
}

func (c *Child) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

// ProcStatus is a process's memory and CPU use from /proc.
type ProcStatus struct {
	HWMKiB int64         // peak resident set (VmHWM)
	RSSKiB int64         // resident set now (VmRSS)
	CPU    time.Duration // user + system time
}

// ReadProc reads /proc/<pid>/status and /proc/<pid>/stat.
func ReadProc(pid int) (ProcStatus, error) {
	var ps ProcStatus
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ps, fmt.Errorf("read process status: %w", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb := func() int64 {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
			return n
		}
		switch key {
		case "VmHWM":
			ps.HWMKiB = kb()
		case "VmRSS":
			ps.RSSKiB = kb()
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ps, fmt.Errorf("read process stat: %w", err)
	}
	// Fields after the command name, which may itself hold spaces and ")".
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return ps, errors.New("read process stat: unexpected format")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return ps, errors.New("read process stat: too few fields")
	}
	// utime and stime are fields 14 and 15 of stat, in clock ticks; Linux
	// reports them in USER_HZ, which is 100 on every architecture Go supports.
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	ps.CPU = time.Duration(ut+st) * 10 * time.Millisecond
	return ps, nil
}

// ForkExec runs argv again and again on workers goroutines for d and returns
// how many runs exited 0 and how long it took: the raw rate a command target
// is compared against.
func ForkExec(ctx context.Context, argv []string, workers int, d time.Duration) (ok int64, elapsed time.Duration, err error) {
	var n atomic.Int64
	var firstErr error
	var once sync.Once
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(end) {
				if err := exec.CommandContext(ctx, argv[0], argv[1:]...).Run(); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return n.Load(), time.Since(start), fmt.Errorf("run %s: %w", argv[0], firstErr)
	}
	return n.Load(), time.Since(start), nil
}

// Counters reads the named unlabelled counters from hookbox's /metrics at
// base, in the order asked (e.g. hookbox_delivered_total: the deliveries
// that succeeded since the server started). A name the scrape lacks is an
// error.
func Counters(ctx context.Context, client *http.Client, base string, names ...string) ([]int64, error) {
	if err := CheckLoopback(base); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("read metrics: status %d", resp.StatusCode)
	}
	values := make([]int64, len(names))
	found := make([]bool, len(names))
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 1<<20))
	for sc.Scan() {
		name, num, ok := strings.Cut(sc.Text(), " ")
		i := slices.Index(names, name)
		if !ok || i < 0 {
			continue
		}
		// The exposition format writes large counts as floats (1.5e+06).
		f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil {
			return nil, fmt.Errorf("read metrics: %s %q: %w", name, num, err)
		}
		values[i] = int64(f)
		found[i] = true
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	if i := slices.Index(found, false); i >= 0 {
		return nil, fmt.Errorf("read metrics: no %s line (is this hookbox?)", names[i])
	}
	return values, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(string(b.buf))
}

// Every calls f every d, from its own goroutine, until the returned stop is
// called; stop returns once f is no longer running.
func Every(d time.Duration, f func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			f()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// MachineCPU is the time all of the machine's CPUs spent in each state, in
// clock ticks, from the first line of /proc/stat.
type MachineCPU struct {
	idle    uint64 // idle, and idle waiting for I/O
	softIRQ uint64 // interrupt work such as loopback network delivery, charged to no process
	steal   uint64 // taken by the hypervisor for other guests
	total   uint64
}

// ReadMachineCPU reads the machine's CPU time by state (Linux).
func ReadMachineCPU() (MachineCPU, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return MachineCPU{}, err
	}
	return parseMachineCPU(b)
}

func parseMachineCPU(stat []byte) (MachineCPU, error) {
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	f := strings.Fields(string(line))
	// cpu user nice system idle iowait irq softirq steal [guest guest_nice]
	if len(f) < 9 || f[0] != "cpu" {
		return MachineCPU{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var v [8]uint64
	for i := range v {
		n, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil {
			return MachineCPU{}, fmt.Errorf("/proc/stat: %q: %w", line, err)
		}
		v[i] = n
	}
	m := MachineCPU{idle: v[3] + v[4], softIRQ: v[6], steal: v[7]}
	for _, n := range v {
		m.total += n
	}
	return m, nil
}

// Shares returns the idle, softirq and steal percentages of the time
// between m and a later reading.
func (m MachineCPU) Shares(later MachineCPU) (idle, softirq, steal float64) {
	total := float64(later.total - m.total)
	if total <= 0 {
		return 0, 0, 0
	}
	pct := func(a, b uint64) float64 { return 100 * float64(b-a) / total }
	return pct(m.idle, later.idle), pct(m.softIRQ, later.softIRQ), pct(m.steal, later.steal)
}
