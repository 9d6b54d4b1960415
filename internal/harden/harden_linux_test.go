package harden

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestHardenChild runs in a child process (HOOKBOX_HARDEN_CHILD=1), so that
// the test binary itself stays dumpable.
func TestHardenChild(t *testing.T) {
	if os.Getenv("HOOKBOX_HARDEN_CHILD") != "1" {
		t.Skip("run by TestHardenProcess")
	}
	if err := Process(); err != nil {
		t.Fatal(err)
	}
	d, err := Dumpable()
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("dumpable=" + map[bool]string{true: "yes", false: "no"}[d] + "\n")
}

// serve's process is not dumpable: other processes of its user, its
// command targets included, cannot read its environment (secret_env
// secrets) from /proc.
func TestHardenProcess(t *testing.T) {
	if d, err := Dumpable(); err != nil || !d {
		t.Fatalf("the test process itself: dumpable %v, %v; want dumpable, to see the change", d, err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHardenChild$", "-test.v")
	cmd.Env = append(os.Environ(), "HOOKBOX_HARDEN_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "dumpable=no") {
		t.Errorf("after Process the child says:\n%s\nwant dumpable=no", out)
	}
}
