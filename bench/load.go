package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Load describes one load run.
type Load struct {
	URL      string // must point at a loopback address
	Request  GitHubRequest
	IDPrefix string // delivery ids are IDPrefix-CONN-SEQ (see seqDigits)
	Conns    int
	Duration time.Duration
	// Rate, if > 0, sends at this many requests a second (open loop) over
	// Conns connections instead of as fast as the answers come back.
	Rate float64
	// Progress, if set, is called every second with the answers so far.
	Progress func(elapsed time.Duration, ok, failed int64)
	// OK, if set, counts the 200 answers as they come, for a caller that
	// watches the run (the end-to-end mode's queue depth).
	OK *atomic.Int64
}

// Stats is what a load run measured.
type Stats struct {
	OK      int64         // 200 answers
	Failed  int64         // other answers and transport errors
	Dropped int64         // open loop: sends skipped because every connection was busy
	Elapsed time.Duration // from the first send to the last answer
	Latency Histogram     // of 200 answers; open loop: from the intended send time
	// Lag is, open loop, how late the generator's scheduler handed out each
	// intended send time: its own delay (its timer, the CPUs it shares with
	// the server), which Latency includes. A send that then waits for a free
	// connection is the server's slowness, not counted here.
	Lag        Histogram
	FirstError string
}

// PerSecond is OK answers per second.
func (s *Stats) PerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.OK) / s.Elapsed.Seconds()
}

// CheckLoopback returns an error unless rawURL's host is a loopback address.
func CheckLoopback(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s: the benchmark only sends to a loopback address", rawURL)
	}
	return nil
}

// seqDigits is the width of a delivery id's SEQ, the connection's request
// count: fixed, so that a request's bytes are built once and only these
// digits change. They are written least significant first ("1000…",
// "2000…", … "0100…"), so that one connection's ids do not follow each
// other in the receiver's (source, id) index but land all over it, as
// GitHub's random GUIDs do. Counted up in the usual order, 64 connections
// would insert at 64 points of the index only, and fewer connections at
// fewer points: a cheaper insert than a receiver meets, and a cost that
// changes with the number of connections (wrk's 2 threads counting up made
// hookbox spend about 15% less CPU an ack: BENCHMARKS.md).
const seqDigits = 12

// answerTimeout bounds the wait for one answer (a request unanswered for
// this long fails and its connection is dropped), as net/http's client
// Timeout did for the generator before this one.
const answerTimeout = 30 * time.Second

// Run sends requests for l.Duration and returns what it measured. Requests
// still unanswered 10 s after the end are abandoned and counted as failed.
//
// The generator is built to cost the machine as little as wrk does, since it
// shares the CPUs with the server it measures: each connection is a raw
// keep-alive TCP connection holding its request's bytes, built once, in
// which only the delivery id's digits change from one request to the next;
// an answer is read no further than its status line, the headers that frame
// it (Content-Length, Transfer-Encoding, Connection) and a skip over its
// body. No allocation is made for a request.
func (l Load) Run(ctx context.Context) (*Stats, error) {
	if err := CheckLoopback(l.URL); err != nil {
		return nil, err
	}
	if l.Conns <= 0 {
		return nil, errors.New("load: need at least one connection")
	}
	u, err := url.Parse(l.URL)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, l.Duration+10*time.Second)
	defer cancel()
	hardEnd, _ := ctx.Deadline()

	ok := l.OK
	if ok == nil {
		ok = new(atomic.Int64)
	}
	var failed atomic.Int64
	var firstErr sync.Once
	st := &Stats{}
	fail := func(msg string) {
		failed.Add(1)
		firstErr.Do(func() { st.FirstError = msg })
	}
	conns := &connSet{open: map[net.Conn]struct{}{}}
	stopClosing := context.AfterFunc(ctx, conns.closeAll)
	defer stopClosing()
	defer conns.closeAll()
	workers := make([]*worker, l.Conns)
	for i := range workers {
		workers[i] = &worker{
			addr: u.Host, req: buildRequest(u, l.Request, fmt.Sprintf("%s-%d-", l.IDPrefix, i)),
			conns: conns, hardEnd: hardEnd, ok: ok, fail: fail,
		}
		workers[i].seq = len(workers[i].req) - len(l.Request.Body) - len("\r\n\r\n") - seqDigits
	}

	start := time.Now()
	end := start.Add(l.Duration)
	stopProgress := progress(l, start, ok, &failed)
	var wg sync.WaitGroup
	if l.Rate > 0 {
		sched := make(chan time.Time, l.Conns)
		for _, w := range workers {
			wg.Go(func() {
				for at := range sched {
					w.do(ctx, at)
				}
			})
		}
		st.Dropped = schedule(ctx, sched, start, end, l.Rate, &st.Lag)
		close(sched)
	} else {
		for _, w := range workers {
			wg.Go(func() {
				for now := time.Now(); now.Before(end) && now.Before(hardEnd) && ctx.Err() == nil; {
					now = w.do(ctx, now)
				}
			})
		}
	}
	wg.Wait()
	st.Elapsed = time.Since(start)
	stopProgress()
	for _, w := range workers {
		st.Latency.Merge(&w.hist)
	}
	st.OK, st.Failed = ok.Load(), failed.Load()
	return st, nil
}

// buildRequest returns the bytes of r as a POST to u, its delivery id idPrefix
// followed by seqDigits zeros, in the last header.
func buildRequest(u *url.URL, r GitHubRequest, idPrefix string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\n", u.RequestURI(), u.Host)
	for _, k := range slices.Sorted(maps.Keys(r.Header)) {
		switch textproto.CanonicalMIMEHeaderKey(k) {
		case textproto.CanonicalMIMEHeaderKey(IDHeader), "Content-Length", "Host":
			continue
		}
		for _, v := range r.Header[k] {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n%s: %s%0*d\r\n\r\n", len(r.Body), IDHeader, idPrefix, seqDigits, 0)
	b.Write(r.Body)
	return b.Bytes()
}

// schedule sends the intended send times at rate a second until end; a time
// no connection is free to take is dropped and counted. lag records how late
// each time was handed out.
func schedule(ctx context.Context, sched chan<- time.Time, start, end time.Time, rate float64, lag *Histogram) (dropped int64) {
	_ = pace(ctx, start, end, rate, func(at time.Time) error {
		lag.Record(time.Since(at))
		select {
		case sched <- at:
		default:
			dropped++
		}
		return nil
	})
	return dropped
}

// pace calls fn at start, then every 1/rate seconds (at the time it was due,
// or at once when late), until that time or the clock reaches end, fn fails,
// or ctx ends. It returns fn's error or ctx's.
func pace(ctx context.Context, start, end time.Time, rate float64, fn func(at time.Time) error) error {
	interval := time.Duration(float64(time.Second) / rate)
	t := time.NewTimer(0)
	defer t.Stop()
	for i := int64(0); ; i++ {
		at := start.Add(time.Duration(i) * interval)
		if !at.Before(end) || !time.Now().Before(end) {
			return nil
		}
		if d := time.Until(at); d > 0 {
			t.Reset(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		} else if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(at); err != nil {
			return err
		}
	}
}

func progress(l Load, start time.Time, ok, failed *atomic.Int64) (stop func()) {
	if l.Progress == nil {
		return func() {}
	}
	first := true
	return Every(time.Second, func() {
		if first { // Every calls at once; the first report is due after a second
			first = false
			return
		}
		l.Progress(time.Since(start), ok.Load(), failed.Load())
	})
}

// connSet is the run's open connections, closed all at once when the run
// ends or is cancelled, which ends any read still waiting on one.
type connSet struct {
	mu     sync.Mutex
	open   map[net.Conn]struct{}
	closed bool
}

// dial opens a connection to addr, unless the set is closed.
func (s *connSet) dial(ctx context.Context, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return nil, net.ErrClosed
	}
	s.open[c] = struct{}{}
	return c, nil
}

func (s *connSet) drop(c net.Conn) {
	s.mu.Lock()
	delete(s.open, c)
	s.mu.Unlock()
	c.Close()
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for c := range s.open {
		c.Close()
	}
	clear(s.open)
}

// worker is one keep-alive connection: N workers hold exactly N
// connections. It sends one request at a time and redials after an error or
// an answer that closes the connection.
type worker struct {
	addr    string
	req     []byte // the request, its delivery id's digits at req[seq:seq+seqDigits]
	seq     int
	conns   *connSet
	hardEnd time.Time // no answer is awaited past it
	ok      *atomic.Int64
	fail    func(string)
	hist    Histogram

	c        net.Conn
	br       *bufio.Reader
	deadline time.Time // when c's deadline was last set
}

// do sends one request, intended at time at, and waits for its answer. It
// returns the time the answer came (or the request failed).
func (w *worker) do(ctx context.Context, at time.Time) time.Time {
	if w.c == nil {
		c, err := w.conns.dial(ctx, w.addr)
		if err != nil {
			w.failed(ctx, err)
			if ctx.Err() == nil {
				// Do not spin on a server that refuses connections.
				time.Sleep(10 * time.Millisecond)
			}
			return time.Now()
		}
		w.c = c
		if w.br == nil {
			w.br = bufio.NewReaderSize(c, 4<<10)
		} else {
			w.br.Reset(c)
		}
		w.deadline = time.Time{}
	}
	// Refreshed at most once a second, not for every request: a deadline
	// up to a second short of answerTimeout is as good a bound. at is
	// about now: the last answer's time (closed loop) or a send time just
	// handed out (open loop).
	if at.Sub(w.deadline) > time.Second {
		w.deadline = at
		d := at.Add(answerTimeout)
		if d.After(w.hardEnd) {
			d = w.hardEnd
		}
		_ = w.c.SetDeadline(d)
	}
	w.nextID()
	if _, err := w.c.Write(w.req); err != nil {
		return w.failed(ctx, err)
	}
	status, keepAlive, err := readAnswer(w.br)
	now := time.Now()
	if err != nil {
		return w.failed(ctx, err)
	}
	if !keepAlive {
		w.close()
	}
	if status != 200 {
		w.fail("status " + strconv.Itoa(status))
		return now
	}
	w.hist.Record(now.Sub(at))
	w.ok.Add(1)
	return now
}

// nextID counts the delivery id's digits up by one, the first digit the
// least significant.
func (w *worker) nextID() {
	d := w.req[w.seq : w.seq+seqDigits]
	for i := range d {
		if d[i] < '9' {
			d[i]++
			return
		}
		d[i] = '0'
	}
	// 10^12 requests on one connection: not within an hour of this machine.
	panic("bench: delivery id sequence exhausted")
}

func (w *worker) failed(ctx context.Context, err error) time.Time {
	if w.c != nil {
		w.close()
	}
	// A read cut short by the run's end (its deadline is the run's) may
	// come a moment before ctx says so.
	now := time.Now()
	if ctx.Err() != nil || !now.Before(w.hardEnd) {
		w.fail("abandoned at the end of the run")
	} else {
		w.fail(err.Error())
	}
	return now
}

func (w *worker) close() {
	w.conns.drop(w.c)
	w.c = nil
}

// readAnswer reads one HTTP/1.x answer and skips its body. It reads what
// frames the answer and nothing else: hookbox and the bare server (net/http,
// small bodies) answer with a Content-Length, so a chunked answer is refused
// rather than parsed; an answer with neither is read until the connection
// closes, as HTTP/1.1 says.
func readAnswer(br *bufio.Reader) (status int, keepAlive bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, false, fmt.Errorf("read the answer: %w", err)
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, false, fmt.Errorf("not an HTTP/1.x status line: %q", line)
	}
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return 0, false, fmt.Errorf("not an HTTP/1.x status line: %q", line)
		}
		status = status*10 + int(c-'0')
	}
	keepAlive = line[7] == '1' // HTTP/1.0 closes unless it says otherwise
	length := -1
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, false, fmt.Errorf("read the answer's header: %w", err)
		}
		if len(line) <= 2 {
			break // the blank line ending the header
		}
		name, value, found := bytes.Cut(line, []byte(":"))
		if !found {
			return 0, false, fmt.Errorf("malformed header line in the answer: %q", line)
		}
		switch len(name) {
		case len("Content-Length"):
			if bytes.EqualFold(name, []byte("Content-Length")) {
				if length, err = atoi(bytes.TrimSpace(value)); err != nil {
					return 0, false, fmt.Errorf("answer's Content-Length %q: %w", bytes.TrimSpace(value), err)
				}
			}
		case len("Transfer-Encoding"):
			if bytes.EqualFold(name, []byte("Transfer-Encoding")) {
				return 0, false, fmt.Errorf("answer with Transfer-Encoding %q: only Content-Length bodies are read", bytes.TrimSpace(value))
			}
		case len("Connection"):
			if bytes.EqualFold(name, []byte("Connection")) {
				v := bytes.TrimSpace(value)
				keepAlive = !bytes.EqualFold(v, []byte("close")) && (keepAlive || bytes.EqualFold(v, []byte("keep-alive")))
			}
		}
	}
	switch {
	case status < 200 && status >= 100:
		return 0, false, fmt.Errorf("interim answer %d: not expected, no request asks for one", status)
	case status == 204 || status == 304:
	case length >= 0:
		if _, err := br.Discard(length); err != nil {
			return 0, false, fmt.Errorf("read the answer's body: %w", err)
		}
	default:
		if _, err := io.Copy(io.Discard, br); err != nil {
			return 0, false, fmt.Errorf("read the answer's body: %w", err)
		}
		keepAlive = false
	}
	return status, keepAlive, nil
}

// atoi parses a non-negative decimal without allocating.
func atoi(b []byte) (int, error) {
	if len(b) == 0 || len(b) > 18 {
		return 0, errors.New("not a length")
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errors.New("not a length")
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}
