package main_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPrometheusRules checks contrib/prometheus/hookbox-rules.yml with
// promtool (its syntax, and its unit tests in hookbox-rules.test.yml) when
// promtool is installed (CI installs it), and, always, that every metric
// it names is one a running hookbox serves.
func TestPrometheusRules(t *testing.T) {
	dir := filepath.Join("contrib", "prometheus")
	rules, err := os.ReadFile(filepath.Join(dir, "hookbox-rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	tm := MustRunMain(t, `
[[source]]
name = "stripe"
verify = "none"
insecure = true
event_id = "header:X-Id"

[[target]]
name = "billing"
source = "stripe"
command = ["true"]
`, "")
	body := scrape(t, tm.AdminURL)
	for _, name := range regexp.MustCompile(`\bhookbox_[a-z_]+`).FindAllString(string(rules), -1) {
		// A histogram's family name shows as its _bucket, _sum, _count series.
		if !strings.Contains(body, "\n"+name+"{") && !strings.Contains(body, "\n"+name+" ") && !strings.Contains(body, "\n"+name+"_count") {
			t.Errorf("the rules use %s, which hookbox does not serve", name)
		}
	}

	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not on PATH: the rules' own tests not run (apt-get install prometheus)")
	}
	for _, args := range [][]string{
		{"check", "rules", "hookbox-rules.yml"},
		{"test", "rules", "hookbox-rules.test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
	}
}
