//go:build unix

package handlers

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup makes the child the leader of a new process group, so a timeout can
// signal it together with everything it started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// terminateGroup asks the whole group to stop. ESRCH means the group is already gone,
// reported as os.ErrProcessDone so os/exec keeps the real exit status.
func terminateGroup(p *os.Process) error {
	if p == nil {
		return os.ErrProcessDone
	}
	if err := syscall.Kill(-p.Pid, syscall.SIGTERM); err != nil {
		if err == syscall.ESRCH {
			return os.ErrProcessDone
		}
		return err
	}
	return nil
}

// killGroup kills whatever is left of the group; an empty group is not an error.
func killGroup(p *os.Process) {
	if p != nil {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
}
