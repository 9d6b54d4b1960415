//go:build !(linux || darwin || freebsd)

package admission

import "errors"

func freeDisk(string) (uint64, error) {
	return 0, errors.New("the free disk space cannot be read on this system")
}
