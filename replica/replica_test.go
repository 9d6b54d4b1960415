package replica_test

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"hookbox/replica"
)

func TestSelf(t *testing.T) {
	a, err := replica.Self()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := replica.Self()
	host, _ := os.Hostname()
	if a.ID == b.ID || !strings.HasPrefix(a.ID, host+"-") || a.PID != os.Getpid() {
		t.Fatalf("ids %q and %q: want distinct, each starting %q, pid %d", a.ID, b.ID, host+"-", os.Getpid())
	}
}

// A process that exited is gone; a running one, this process under
// another identity, or one on another machine, is not.
func TestProcess_Gone(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	self, err := replica.Self()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child := self
	child.ID, child.PID = "child", cmd.Process.Pid
	child.Start = startOf(t, child.PID)
	if self.Gone(child) {
		t.Fatal("running child: gone, want not")
	}
	other := self
	other.ID = "same process, another identity"
	if self.Gone(other) {
		t.Fatal("this process under another identity: gone, want not")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !self.Gone(child) {
		t.Fatal("exited child: not gone, want gone")
	}
	elsewhere := child
	elsewhere.Host = "another-machine"
	if self.Gone(elsewhere) {
		t.Fatal("exited pid on another machine: gone, want not (cannot tell)")
	}
	otherNS := child
	otherNS.PIDNS = "pid:[1]"
	if self.Gone(otherNS) {
		t.Fatal("exited pid in another pid namespace: gone, want not (cannot tell)")
	}
	reused := self
	reused.ID, reused.Start = "reused pid", self.Start+1
	if !self.Gone(reused) {
		t.Fatal("a pid now held by a later process: not gone, want gone")
	}
	rebooted := child
	rebooted.Boot = "an earlier boot"
	if !self.Gone(rebooted) {
		t.Fatal("a process of an earlier boot: not gone, want gone")
	}
}

func startOf(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	n, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
