// Package sdnotify speaks systemd's notify protocol (sd_notify(3)): one
// datagram per state change to the unix socket named by $NOTIFY_SOCKET.
// A unit with Type=notify waits for READY=1 before it counts as started;
// with WatchdogSec= it restarts the service when WATCHDOG=1 stops coming.
package sdnotify

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Notifier sends states to systemd. A nil *Notifier sends nothing (no
// $NOTIFY_SOCKET: not started by systemd as Type=notify).
type Notifier struct {
	addr *net.UnixAddr
}

// New returns a notifier for the socket path socket (from
// $NOTIFY_SOCKET), or nil when it is "". A leading "@" names an abstract
// socket. Only unix sockets are supported (systemd's vsock form is not).
func New(socket string) (*Notifier, error) {
	switch {
	case socket == "":
		return nil, nil
	case socket[0] == '@':
		socket = "\x00" + socket[1:]
	case socket[0] != '/':
		return nil, fmt.Errorf("NOTIFY_SOCKET %q: want an absolute path or @abstract name", socket)
	}
	return &Notifier{addr: &net.UnixAddr{Name: socket, Net: "unixgram"}}, nil
}

// Notify sends state, e.g. "READY=1" or "WATCHDOG=1"; several lines may be
// sent in one. It returns an error when the datagram could not be sent.
func (n *Notifier) Notify(state string) error {
	if n == nil {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return fmt.Errorf("sd_notify %s: %w", firstLine(state), err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sd_notify %s: %w", firstLine(state), err)
	}
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// WatchdogInterval reads $WATCHDOG_USEC and $WATCHDOG_PID (through getenv)
// as sd_watchdog_enabled(3) does: how often systemd expects WATCHDOG=1, and
// false when it expects none (unset, or meant for another process than
// pid).
func WatchdogInterval(getenv func(string) string, pid int) (time.Duration, bool, error) {
	usec := getenv("WATCHDOG_USEC")
	if usec == "" {
		return 0, false, nil
	}
	if p := getenv("WATCHDOG_PID"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil {
			return 0, false, fmt.Errorf("WATCHDOG_PID %q: %w", p, err)
		}
		if n != pid {
			return 0, false, nil
		}
	}
	n, err := strconv.ParseUint(usec, 10, 63)
	if err != nil || n == 0 {
		return 0, false, errors.New("WATCHDOG_USEC " + strconv.Quote(usec) + ": want a positive number of microseconds")
	}
	return time.Duration(n) * time.Microsecond, true, nil
}
