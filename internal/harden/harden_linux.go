// Package harden keeps serve's secrets from other processes of its user.
package harden

import "syscall"

// Process makes serve's own /proc entries readable by root only
// (PR_SET_DUMPABLE 0): its command targets run as the same user, and
// /proc/<hookbox>/environ holds the secret_env variables, signing secrets
// included. It also means no core dump, which would hold them too.
func Process() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// Dumpable reports the process's PR_GET_DUMPABLE flag.
func Dumpable() (bool, error) {
	r, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_GET_DUMPABLE, 0, 0)
	if errno != 0 {
		return false, errno
	}
	return r != 0, nil
}
