// Package handlers runs one delivery attempt against a target: a URL or a local command.
// It also builds, from the config, the queue's targets (Targets), the alert notifier
// (Notifier) and the notes on programs that cannot run (ProgramNotes), and stops the
// commands a killed hookbox left running (StopRunningLeftovers).
//
// A target never sees more than one attempt at a time from this package's point of view;
// scheduling, retries and dead-lettering belong to the caller. Every failed attempt comes
// back as an *Error, which says whether the target said that no retry can succeed
// (Permanent) and whether it asked for a later retry.
package handlers

import (
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultTimeout bounds an attempt when a target is built with a timeout <= 0:
// an attempt is never allowed to run unbounded.
const DefaultTimeout = 30 * time.Second

// Delivery is one attempt of one stored event at one target.
type Delivery struct {
	EventID     string // the provider's event id (dedupe key)
	Source      string
	Type        string // event type, may be ""
	Attempt     int    // 1-based
	ReceivedAt  time.Time
	ContentType string // original Content-Type, may be ""
	Body        []byte // raw bytes, forwarded byte-exact
	// Refetched is "1" when Body is the resource's state fetched from the
	// provider's API, "gone" when the API said the resource is gone (Body
	// is then the webhook's own), "" without refetch.
	Refetched string
}

// Result describes a finished attempt, successful or not (recorded and shown to users).
type Result struct {
	Status   int           // HTTP status (URL targets), 0 if none
	ExitCode int           // command exit code, -1 if killed/none
	Output   string        // bounded output: response body or combined stdout+stderr (head and tail kept)
	Duration time.Duration // from the start of the attempt to its end
}

// Error is a failed attempt. Every failure is retried until max attempts but a
// Permanent one, which only the target can declare: a command's exit 65 (EX_DATAERR),
// or an HTTP status the URL target was given as permanent. Anything else (a timeout,
// a refused connection, a bad certificate, a missing program) may mend with time or a
// fix on the other side, and is retried. RetryAfter > 0 asks for a later retry
// (Retry-After header).
type Error struct {
	Msg        string        // short, e.g. "status 503", "exit status 3", "timeout after 10s", "connection refused"
	RetryAfter time.Duration // from the target's Retry-After, 0 if none
	Permanent  bool          // the target said no retry can succeed
	Err        error         // underlying, may be nil
}

// Error returns the short message recorded for the attempt.
func (e *Error) Error() string {
	if e.Msg == "" && e.Err != nil {
		return e.Err.Error()
	}
	return e.Msg
}

// Unwrap returns the underlying error, so errors.Is(err, context.Canceled) works.
func (e *Error) Unwrap() error { return e.Err }

// headTail is an io.Writer that keeps the first headMax and the last tailMax bytes
// written to it and counts the rest. It is safe for concurrent use, so one value can
// be both a command's stdout and stderr.
type headTail struct {
	headMax, tailMax int

	mu    sync.Mutex
	head  []byte
	tail  []byte // grows to 2*tailMax before it is compacted, so writes stay amortised O(n)
	total int64
}

func newHeadTail(headMax, tailMax int) *headTail {
	return &headTail{headMax: headMax, tailMax: tailMax}
}

// Write never fails: output beyond the bounds is counted and dropped, never an error
// that would make os/exec stop draining the pipe and block the child.
func (w *headTail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	w.total += int64(n)
	if room := w.headMax - len(w.head); room > 0 {
		k := min(room, len(p))
		w.head = append(w.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 || w.tailMax <= 0 {
		return n, nil
	}
	if len(p) > w.tailMax {
		p = p[len(p)-w.tailMax:]
	}
	if len(w.tail)+len(p) > 2*w.tailMax {
		keep := w.tailMax - len(p)
		w.tail = append(w.tail[:0], w.tail[len(w.tail)-keep:]...)
	}
	w.tail = append(w.tail, p...)
	return n, nil
}

// ReadFrom is how os/exec's goroutine drains a command's output pipe into w
// (io.Copy prefers it): through a pooled buffer, where io.Copy would
// allocate and zero a fresh 32 KiB one for every run. It reads until EOF
// or a read error, which it returns.
func (w *headTail) ReadFrom(r io.Reader) (int64, error) {
	bp := copyBufs.Get().(*[32 << 10]byte)
	defer copyBufs.Put(bp)
	var n int64
	for {
		k, err := r.Read(bp[:])
		if k > 0 {
			w.Write(bp[:k])
			n += int64(k)
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

var copyBufs = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// String returns head, an omission marker if bytes were dropped, and tail. Invalid
// UTF-8 (binary output, or a rune cut at a boundary) is replaced, since the text is
// stored and shown to people.
func (w *headTail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	tail := w.tail
	if len(tail) > w.tailMax {
		tail = tail[len(tail)-w.tailMax:]
	}
	omitted := w.total - int64(len(w.head)) - int64(len(tail))
	var b strings.Builder
	b.Grow(len(w.head) + len(tail) + 40)
	b.Write(w.head)
	if omitted > 0 {
		b.WriteString(omittedMarker(omitted, false))
	}
	b.Write(tail)
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}

// omittedMarker says how many bytes of output were dropped; atLeast marks a count
// that stopped at a read limit.
func omittedMarker(n int64, atLeast bool) string {
	if atLeast {
		return "\n…[more than " + strconv.FormatInt(n, 10) + " bytes omitted]…\n"
	}
	return "\n…[" + strconv.FormatInt(n, 10) + " bytes omitted]…\n"
}
