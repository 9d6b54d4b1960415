package bench

import (
	"math"
	"runtime"
	"testing"
)

func TestMachineCPU_Shares(t *testing.T) {
	// Two readings of a 2-CPU machine's /proc/stat, 1 s (200 ticks) apart.
	a, err := parseMachineCPU([]byte("cpu  1000 5 300 5000 40 0 60 20 0 0\ncpu0 500 2 150 2500 20 0 30 10 0 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseMachineCPU([]byte("cpu  1082 5 340 5040 50 0 78 30 0 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	idle, softirq, steal := a.Shares(b)
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"idle", idle, 25}, {"softirq", softirq, 9}, {"steal", steal, 5}} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s %.2f%%, want %.2f%%", c.name, c.got, c.want)
		}
	}
	for _, bad := range []string{"", "intr 1 2 3\n", "cpu 1 2 3\n", "cpu 1 2 3 x 5 6 7 8\n"} {
		if _, err := parseMachineCPU([]byte(bad)); err == nil {
			t.Errorf("parse %q: no error", bad)
		}
	}
	if runtime.GOOS == "linux" {
		m, err := ReadMachineCPU()
		if err != nil || m.total == 0 || m.idle > m.total {
			t.Errorf("this machine: %+v, %v", m, err)
		}
	}
}
