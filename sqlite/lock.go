package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// RealPath is path absolute, with symbolic links resolved as the kernel
// resolves them, also for a store not created yet: a link to a file not
// there yet names that file, and a missing file is named through its
// directory's real path. It is the store's identity: the serve lock and
// HOOKBOX_STORE use it, so a store named another way is still the same.
func RealPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	for range 40 { // as the kernel, give up on a loop of links
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			return real, nil
		}
		// The file is missing (or a link to a missing one): resolve its
		// directory, then follow the link, if it is one, from there.
		dir, base := filepath.Dir(abs), filepath.Base(abs)
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		target, err := os.Readlink(filepath.Join(dir, base))
		if err != nil {
			return filepath.Join(dir, base), nil
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		abs = target
	}
	return abs, nil
}
