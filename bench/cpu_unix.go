//go:build unix

package bench

import (
	"syscall"
	"time"
)

// SelfCPU is the user+system CPU this process has used, to the
// microsecond (/proc counts in clock ticks of 10 ms).
func SelfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
