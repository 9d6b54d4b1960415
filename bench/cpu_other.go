//go:build !unix

package bench

import (
	"errors"
	"time"
)

// SelfCPU is the user+system CPU this process has used; only Unix systems
// can say.
func SelfCPU() (time.Duration, error) {
	return 0, errors.New("this process's CPU time: not available on this system (Unix only)")
}
