package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Sink is a URL target that counts deliveries, once per distinct
// Hookbox-Source and Hookbox-Event-Id, and remembers when the last new one
// arrived.
//
// It is a minimal HTTP/1.1 server rather than net/http: it shares the
// machine's CPUs with the hookbox it measures, and the less it costs, the
// more a drain measures hookbox rather than the sink. It reads keep-alive
// requests with a Content-Length body (what hookbox sends) and answers each
// with an empty 200; anything else closes the connection.
type Sink struct {
	mu   sync.Mutex
	seen map[string]struct{}
	last time.Time
	// running counts the requests being read or answered; ended is when
	// the last one was answered, maxGap the longest wait from an answer
	// to the next request while none ran (one lane's idle time).
	running int
	ended   time.Time
	gaps    []time.Duration // each such wait, up to maxGaps

	ln      net.Listener
	connMu  sync.Mutex
	conns   map[net.Conn]struct{}
	closed  bool
	refused error // the first request the sink could not read, but for a closed connection
	wg      sync.WaitGroup
}

// StartSink serves a sink on a loopback port until Close.
func StartSink() (*Sink, error) {
	ln, err := Listen()
	if err != nil {
		return nil, err
	}
	s := &Sink{seen: map[string]struct{}{}, ln: ln, conns: map[net.Conn]struct{}{}}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// URL is where to deliver.
func (s *Sink) URL() string { return "http://" + s.ln.Addr().String() + "/sink" }

func (s *Sink) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.connMu.Lock()
		if s.closed {
			s.connMu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.connMu.Unlock()
		go s.serve(c)
	}
}

var sinkOK = []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")

func (s *Sink) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.connMu.Lock()
		delete(s.conns, c)
		s.connMu.Unlock()
		c.Close()
	}()
	br := bufio.NewReaderSize(c, 16<<10)
	for {
		id, keepAlive, err := readSinkRequest(br)
		if err != nil {
			// The sink's own verdicts, not a connection that went away.
			var ne net.Error
			if !errors.Is(err, io.EOF) && !errors.As(err, &ne) {
				s.connMu.Lock()
				if s.refused == nil && !s.closed {
					s.refused = err
				}
				s.connMu.Unlock()
			}
			return
		}
		s.record(id)
		_, err = c.Write(sinkOK)
		s.answered()
		if err != nil || !keepAlive {
			return
		}
	}
}

func (s *Sink) record(id string) {
	now := time.Now()
	s.mu.Lock()
	if s.running == 0 && !s.ended.IsZero() && len(s.gaps) < maxGaps {
		s.gaps = append(s.gaps, now.Sub(s.ended))
	}
	s.running++
	if _, ok := s.seen[id]; !ok {
		s.seen[id] = struct{}{}
		s.last = now
	}
	s.mu.Unlock()
}

// readSinkRequest reads one request and its body and returns its
// "source:event id" key and whether the client keeps the connection.
func readSinkRequest(br *bufio.Reader) (id string, keepAlive bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return "", false, err
	}
	if !bytes.HasSuffix(line, []byte(" HTTP/1.1\r\n")) {
		return "", false, fmt.Errorf("sink: not an HTTP/1.1 request line: %q", line)
	}
	keepAlive = true
	length := -1
	var source, event []byte
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return "", false, err
		}
		if len(line) <= 2 {
			break // the blank line ending the header
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return "", false, fmt.Errorf("sink: malformed header line %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return "", false, fmt.Errorf("sink: bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return "", false, errors.New("sink: only Content-Length bodies are read")
		case bytes.EqualFold(name, []byte("Connection")):
			keepAlive = !bytes.EqualFold(value, []byte("close"))
		case bytes.EqualFold(name, []byte("Hookbox-Source")):
			source = append(source, value...) // the buffer is reused by the next read
		case bytes.EqualFold(name, []byte("Hookbox-Event-Id")):
			event = append(event, value...)
		}
	}
	if length < 0 {
		return "", false, errors.New("sink: no Content-Length")
	}
	if _, err := br.Discard(length); err != nil {
		return "", false, err
	}
	return string(source) + ":" + string(event), keepAlive, nil
}

func (s *Sink) answered() {
	now := time.Now()
	s.mu.Lock()
	s.running--
	s.ended = now
	s.mu.Unlock()
}

// maxGaps bounds the idle gaps a sink keeps.
const maxGaps = 1 << 20

// IdleGaps are the sink's waits, since Reset, from answering a delivery
// to the next one while it held none, sorted.
func (s *Sink) IdleGaps() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(slices.Values(s.gaps))
}

// Refused returns why the sink first refused a request, or nil.
func (s *Sink) Refused() error {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	return s.refused
}

// Counts returns the distinct events delivered and when the last one
// arrived.
func (s *Sink) Counts() (distinct int64, last time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.seen)), s.last
}

// Reset forgets every delivery.
func (s *Sink) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = map[string]struct{}{}
	s.last = time.Time{}
	s.ended, s.gaps = time.Time{}, nil
}

// Close stops the sink and closes its connections.
func (s *Sink) Close() error {
	err := s.ln.Close()
	s.connMu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.connMu.Unlock()
	s.wg.Wait()
	return err
}
