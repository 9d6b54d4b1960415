//go:build linux || darwin || freebsd

package admission

import "syscall"

// freeDisk is the space an unprivileged user may still write on dir's file
// system (statfs f_bavail: the blocks reserved for root do not count).
func freeDisk(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return uint64(st.Bavail) * uint64(st.Bsize), nil
}
