//go:build !unix

package bench

import (
	"os"
	"time"
)

// SelfCPU is the user+system CPU this process has used.
func SelfCPU() (time.Duration, error) {
	ps, err := ReadProc(os.Getpid())
	return ps.CPU, err
}
