package fire

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// Requests go over connections of their own, one a request as providers
// send them, written and read by hand: so a request can be held before
// its last byte (dup-par), or its answer left unread (lost-response), and
// nothing is contacted but the URL's host (no proxy, no redirect).

// maxAnswer bounds how much of an answer's body is read.
const maxAnswer = 64 << 10

// raw is the request's bytes as they go on the wire.
func (w *wire) raw() ([]byte, error) {
	req, err := http.NewRequest(http.MethodPost, w.url.String(), bytes.NewReader(w.body))
	if err != nil {
		return nil, err
	}
	req.Header = w.header.Clone()
	req.ContentLength = int64(len(w.body))
	req.Close = true
	var buf bytes.Buffer
	if err := req.Write(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// dial opens a connection to the URL's host, with TLS for https, within
// timeout.
func dial(ctx context.Context, w *wire, timeout time.Duration) (net.Conn, error) {
	host := w.url.Host
	if w.url.Port() == "" {
		port := "80"
		if w.url.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(w.url.Hostname(), port)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	if w.url.Scheme != "https" {
		return conn, nil
	}
	tc := tls.Client(conn, &tls.Config{ServerName: w.url.Hostname(), MinVersion: tls.VersionTLS12})
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}

// readAnswer reads an answer's status line and headers, and up to
// maxAnswer of its body, by deadline.
func readAnswer(conn net.Conn, deadline time.Time) (int, error) {
	if err := conn.SetReadDeadline(deadline); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
	resp.Body.Close()
	return resp.StatusCode, nil
}

// failed records on a what went wrong with a request, for the report.
func failed(a *Answer, prefix string, err error, timeout time.Duration) {
	var ne net.Error
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		a.Error, a.TimedOut = fmt.Sprintf("no answer within %s", timeout), true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		a.Error = prefix + "the connection was closed without an answer"
	default:
		a.Error = prefix + err.Error()
	}
}

// send writes a request on a connection of its own and waits up to timeout
// for its answer, the latency counted from its last byte.
func send(ctx context.Context, w *wire, timeout time.Duration) Answer {
	raw, err := w.raw()
	if err != nil {
		return Answer{Error: err.Error()}
	}
	conn, err := dial(ctx, w, timeout)
	if err != nil {
		return Answer{Error: "connect: " + err.Error()}
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if err := conn.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return Answer{Error: err.Error()}
	}
	var a Answer
	if _, err := conn.Write(raw); err != nil {
		failed(&a, "write: ", err, timeout)
		return a
	}
	sent := time.Now()
	status, err := readAnswer(conn, sent.Add(timeout))
	a.Status, a.Latency = status, Millis(time.Since(sent))
	if err != nil {
		failed(&a, "", err, timeout)
	}
	return a
}

// sendAndDrop writes a request and, once its answer starts to arrive (the
// handler has done its work and answers), resets the connection without
// reading the answer: the provider sees no answer, as when a connection
// drops or a proxy gives up. An answer that does not start within timeout
// is given up too.
func sendAndDrop(ctx context.Context, w *wire, timeout time.Duration) Answer {
	raw, err := w.raw()
	if err != nil {
		return Answer{Error: err.Error()}
	}
	conn, err := dial(ctx, w, timeout)
	if err != nil {
		return Answer{Error: "connect: " + err.Error()}
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if err := conn.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return Answer{Error: err.Error()}
	}
	a := Answer{Dropped: true}
	if _, err := conn.Write(raw); err != nil {
		failed(&a, "write: ", err, timeout)
		return a
	}
	sent := time.Now()
	if err := conn.SetReadDeadline(sent.Add(timeout)); err != nil {
		return Answer{Error: err.Error()}
	}
	var first [1]byte
	if _, err := conn.Read(first[:]); err != nil {
		failed(&a, "", err, timeout)
	}
	a.Latency = Millis(time.Since(sent))
	resetOnClose(conn)
	return a
}

// resetOnClose makes Close send a reset, not a FIN after the unread answer.
func resetOnClose(conn net.Conn) {
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
}

// sendTogether sends n copies of a request at one instant. Each goes on a
// connection of its own, opened beforehand, and is written up to its last
// byte; when every connection holds its request (or failed to), the last
// bytes are released together, so the endpoint's n handlers have all read
// the headers and wait on the body's last byte when it comes. Latencies
// count from the release.
func sendTogether(ctx context.Context, w *wire, n int, timeout time.Duration) []Answer {
	raw, err := w.raw()
	answers := make([]Answer, n)
	if err != nil {
		for i := range answers {
			answers[i].Error = err.Error()
		}
		return answers
	}
	head, last := raw[:len(raw)-1], raw[len(raw)-1:]
	release := make(chan struct{})
	var ready, done sync.WaitGroup
	ready.Add(n)
	done.Add(n)
	var released time.Time
	for i := range n {
		go func() {
			defer done.Done()
			a := &answers[i]
			conn, err := dial(ctx, w, timeout)
			if err != nil {
				a.Error = "connect: " + err.Error()
				ready.Done()
				return
			}
			defer conn.Close()
			stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
			defer stop()
			_ = conn.SetWriteDeadline(time.Now().Add(2 * timeout))
			_, err = conn.Write(head)
			ready.Done()
			if err != nil {
				failed(a, "write: ", err, timeout)
				return
			}
			<-release
			if _, err := conn.Write(last); err != nil {
				failed(a, "write: ", err, timeout)
				return
			}
			status, err := readAnswer(conn, released.Add(timeout))
			a.Status, a.Latency = status, Millis(time.Since(released))
			if err != nil {
				failed(a, "", err, timeout)
			}
		}()
	}
	ready.Wait()
	released = time.Now()
	close(release)
	done.Wait()
	return answers
}
