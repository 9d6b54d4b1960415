package replica

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// self reads the boot id, pid namespace and start time of process pid.
func self(pid int) (boot, pidns string, start uint64) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", "", 0
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return "", "", 0
	}
	start, ok := started(pid)
	if !ok {
		return "", "", 0
	}
	return strings.TrimSpace(string(b)), ns, start
}

// started returns the start time of process pid, in clock ticks after
// boot, and whether it runs (is there and not a zombie).
func started(pid int) (uint64, bool) {
	if pid <= 0 {
		return 0, false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// "pid (comm) state ppid … starttime(22nd field) …": comm may hold
	// spaces and parentheses, so fields count from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3
	if len(f) < 20 || len(f[0]) != 1 || f[0][0] == 'Z' || f[0][0] == 'X' {
		return 0, false
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return 0, false
	}
	return start, true
}
