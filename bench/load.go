package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Load describes one load run.
type Load struct {
	URL      string // must point at a loopback address
	Request  GitHubRequest
	IDPrefix string // delivery ids are IDPrefix-conn-seq
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

// Run sends requests for l.Duration and returns what it measured. Requests
// still unanswered 10 s after the end are abandoned and counted as failed.
func Run(ctx context.Context, l Load) (*Stats, error) {
	if err := CheckLoopback(l.URL); err != nil {
		return nil, err
	}
	if l.Conns <= 0 {
		return nil, errors.New("load: need at least one connection")
	}
	ctx, cancel := context.WithTimeout(ctx, l.Duration+10*time.Second)
	defer cancel()

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
	workers := make([]*worker, l.Conns)
	for i := range workers {
		workers[i] = newWorker(l, i, ok, fail)
	}
	defer func() {
		for _, w := range workers {
			w.client.CloseIdleConnections()
		}
	}()

	start := time.Now()
	end := start.Add(l.Duration)
	stopProgress := progress(l, start, ok, &failed)
	var wg sync.WaitGroup
	if l.Rate > 0 {
		sched := make(chan time.Time, l.Conns)
		for _, w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for at := range sched {
					w.do(ctx, at)
				}
			}()
		}
		st.Dropped = schedule(ctx, sched, start, end, l.Rate, &st.Lag)
		close(sched)
	} else {
		for _, w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil && time.Now().Before(end) {
					w.do(ctx, time.Now())
				}
			}()
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

// worker is one keep-alive connection with its own client, so N workers
// hold exactly N connections.
type worker struct {
	l      Load
	conn   int
	seq    uint64
	client *http.Client
	hist   Histogram
	ok     *atomic.Int64
	fail   func(string)
	id     []byte
}

func newWorker(l Load, conn int, ok *atomic.Int64, fail func(string)) *worker {
	tr := &http.Transport{
		Proxy:               nil, // loopback only, never through a proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        1,
		MaxIdleConnsPerHost: 1,
		MaxConnsPerHost:     1,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	return &worker{
		l: l, conn: conn, ok: ok, fail: fail,
		client: &http.Client{Transport: tr, Timeout: 30 * time.Second},
	}
}

func (w *worker) do(ctx context.Context, at time.Time) {
	w.seq++
	w.id = append(w.id[:0], w.l.IDPrefix...)
	w.id = append(w.id, '-')
	w.id = strconv.AppendInt(w.id, int64(w.conn), 10)
	w.id = append(w.id, '-')
	w.id = strconv.AppendUint(w.id, w.seq, 10)

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.l.URL, bytes.NewReader(w.l.Request.Body))
	if err != nil {
		w.fail(err.Error())
		return
	}
	req.Header = w.l.Request.Header.Clone()
	req.Header.Set(IDHeader, string(w.id))
	resp, err := w.client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			w.fail(err.Error())
		} else {
			w.fail("abandoned at the end of the run")
		}
		return
	}
	// Read the answer to the end so the connection is reused.
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		w.fail(fmt.Sprintf("status %d", resp.StatusCode))
		return
	}
	w.hist.Record(time.Since(at))
	w.ok.Add(1)
}
