package store

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Lock takes an exclusive flock on path+".lock" for the life of the
// process, so that one serve runs per store however its path is spelled
// (path is the store's identity, RealPath): two would each take the other's
// running deliveries for interrupted ones and run them again. Closing the
// returned file releases it. (Not a lock on the database file itself:
// closing any descriptor of that file would drop SQLite's own POSIX locks.)
//
// The error says so when another serve holds the store.
func Lock(path string) (*os.File, error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock store: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("store %s is in use by another hookbox serve: stop it first (the read commands may run beside it)", path)
		}
		return nil, fmt.Errorf("lock store %s: %w", path, err)
	}
	return f, nil
}
