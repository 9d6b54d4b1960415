//go:build !unix

package handlers

import (
	"os"
	"os/exec"
)

// Without process groups only the direct child can be signalled.
func setProcessGroup(*exec.Cmd) {}

func terminateGroup(p *os.Process) error {
	if p == nil {
		return os.ErrProcessDone
	}
	return p.Kill()
}

func killGroup(*os.Process) {}
