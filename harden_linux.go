package main

import "syscall"

// hardenProcess makes serve's own /proc entries readable by root only
// (PR_SET_DUMPABLE 0): its command targets run as the same user, and
// /proc/<hookbox>/environ holds the secret_env variables, signing secrets
// included. It also means no core dump, which would hold them too.
func hardenProcess() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// dumpable reports the process's PR_GET_DUMPABLE flag.
func dumpable() (bool, error) {
	r, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_GET_DUMPABLE, 0, 0)
	if errno != 0 {
		return false, errno
	}
	return r != 0, nil
}
