package main_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hookbox/queue"
)

// commandFailureConfig is deliveryConfig (5 attempts, short backoff) with
// an alert URL and one command target running script, which gets OUT (a
// file it may append a line to for each run) in its environment.
func commandFailureConfig(script, out, alertURL string) string {
	return deliveryConfig + fmt.Sprintf(`
[alert]
url = %q

[[target]]
name = "script"
source = "shop"
command = [%q]
env = { OUT = %q }
`, alertURL, script, out)
}

// urlFailureConfig is deliveryConfig with an alert URL and one URL target
// with permanent_status = [410, 422].
func urlFailureConfig(targetURL, alertURL string) string {
	return deliveryConfig + fmt.Sprintf(`
[alert]
url = %q

[[target]]
name = "web"
source = "shop"
url = %q
permanent_status = [410, 422]
`, alertURL, targetURL)
}

// checkDeadShown checks what hookbox event says of row's delivery to
// target, dead after attempts: the reason, if any, in the text and in the
// JSON as dead_reason.
func checkDeadShown(t *testing.T, tm *testMain, row int64, target string, attempts int, reason string) {
	t.Helper()
	want := fmt.Sprintf("%s: dead after %d attempt(s)", target, attempts)
	if reason != "" {
		want += " (" + reason + ")"
	}
	text := cliRun(t, tm.Dir, "event", strconv.FormatInt(row, 10))
	if !strings.Contains(text, want+",") {
		t.Errorf("hookbox event output lacks %q:\n%s", want, text)
	}
	e := cliEvent(t, tm.Dir, row)
	if len(e.Deliveries) != 1 || e.Deliveries[0].DeadReason != reason || e.Deliveries[0].Attempts != attempts {
		t.Errorf("event --json deliveries=%+v, want one dead after %d with dead_reason %q", e.Deliveries, attempts, reason)
	}
}

// A command that exits 65 (EX_DATAERR) says the event can never succeed:
// its delivery is dead after that one attempt, with one alert, and
// hookbox event says why it went dead early.
func TestFailure_CommandExit65IsDeadAtOnce(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "runs")
	script := writeTargetScript(t, `echo run >> "$OUT"; echo "bad payload" >&2; exit 65`+"\n")
	sink := newAlertSink(t, nil)
	tm := MustRunMain(t, commandFailureConfig(script, out, sink.URL), "")
	postEvent(t, tm, "evt_65", "order.created", []byte(`{}`), "accepted")
	row := eventRow(t, tm, "shop", "evt_65")
	d := waitStatus(t, tm, row, "script", queue.Dead, 5*time.Second)
	if d.Attempts != 1 || d.LastError != "exit status 65 (permanent failure)" || d.DeadReason != "permanent: exit 65" {
		t.Errorf("dead delivery attempts=%d last_error=%q dead_reason=%q, want 1 %q %q",
			d.Attempts, d.LastError, d.DeadReason, "exit status 65 (permanent failure)", "permanent: exit 65")
	}
	if runs := readFileLines(t, out); len(runs) != 1 {
		t.Errorf("the command ran %d times, want once (max_attempts is 5)", len(runs))
	}
	waitAlerted(t, tm, row, 5*time.Second)
	alerts, tries := sink.Received()
	if len(alerts) != 1 || tries != 1 {
		t.Fatalf("alert sink got %d alerts in %d requests, want exactly 1", len(alerts), tries)
	}
	if alerts[0]["attempts"] != float64(1) || alerts[0]["error"] != "exit status 65 (permanent failure)" {
		t.Errorf("alert=%v, want attempts 1 and the exit 65 error", alerts[0])
	}
	checkDeadShown(t, tm, row, "script", 1, "permanent: exit 65")
	text := cliRun(t, tm.Dir, "event", strconv.FormatInt(row, 10))
	if !strings.Contains(text, "exit 65") || !strings.Contains(text, "| bad payload") {
		t.Errorf("hookbox event output lacks the attempt's exit code and output:\n%s", text)
	}
}

// Exit 75 (EX_TEMPFAIL) and any other non-zero exit are retried until
// max_attempts, and the dead delivery has no reason of its own.
func TestFailure_CommandOtherExitsAreRetried(t *testing.T) {
	t.Parallel()
	for _, code := range []int{75, 1} {
		t.Run(fmt.Sprintf("Exit %d", code), func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "runs")
			script := writeTargetScript(t, fmt.Sprintf(`echo run >> "$OUT"; exit %d`+"\n", code))
			sink := newAlertSink(t, nil)
			tm := MustRunMain(t, commandFailureConfig(script, out, sink.URL), "")
			postEvent(t, tm, "evt_retry", "order.created", []byte(`{}`), "accepted")
			row := eventRow(t, tm, "shop", "evt_retry")
			d := waitStatus(t, tm, row, "script", queue.Dead, 10*time.Second)
			if d.Attempts != 5 || d.DeadReason != "" {
				t.Errorf("dead delivery attempts=%d dead_reason=%q, want 5 (max_attempts) and none", d.Attempts, d.DeadReason)
			}
			if runs := readFileLines(t, out); len(runs) != 5 {
				t.Errorf("the command ran %d times, want 5", len(runs))
			}
			waitAlerted(t, tm, row, 5*time.Second)
			if alerts, tries := sink.Received(); len(alerts) != 1 || tries != 1 {
				t.Errorf("alert sink got %d alerts in %d requests, want exactly 1", len(alerts), tries)
			}
			checkDeadShown(t, tm, row, "script", 5, "")
		})
	}
}

// A URL target's answer listed in permanent_status is dead after that one
// attempt, with one alert; an answer not listed is retried until
// max_attempts.
func TestFailure_URLPermanentStatus(t *testing.T) {
	t.Parallel()
	t.Run("Listed status", func(t *testing.T) {
		t.Parallel()
		web := newRecordingTarget(t, func(int) int { return http.StatusGone })
		sink := newAlertSink(t, nil)
		tm := MustRunMain(t, urlFailureConfig(web.URL, sink.URL), "")
		postEvent(t, tm, "evt_gone", "order.created", []byte(`{}`), "accepted")
		row := eventRow(t, tm, "shop", "evt_gone")
		d := waitStatus(t, tm, row, "web", queue.Dead, 5*time.Second)
		if d.Attempts != 1 || d.DeadReason != "permanent: status 410" {
			t.Errorf("dead delivery attempts=%d dead_reason=%q, want 1 %q", d.Attempts, d.DeadReason, "permanent: status 410")
		}
		if n := web.Count(); n != 1 {
			t.Errorf("target got %d requests, want 1", n)
		}
		waitAlerted(t, tm, row, 5*time.Second)
		if alerts, tries := sink.Received(); len(alerts) != 1 || tries != 1 {
			t.Errorf("alert sink got %d alerts in %d requests, want exactly 1", len(alerts), tries)
		}
		checkDeadShown(t, tm, row, "web", 1, "permanent: status 410")
	})
	t.Run("Status not listed", func(t *testing.T) {
		t.Parallel()
		web := newRecordingTarget(t, func(int) int { return http.StatusNotFound })
		sink := newAlertSink(t, nil)
		tm := MustRunMain(t, urlFailureConfig(web.URL, sink.URL), "")
		postEvent(t, tm, "evt_404", "order.created", []byte(`{}`), "accepted")
		row := eventRow(t, tm, "shop", "evt_404")
		d := waitStatus(t, tm, row, "web", queue.Dead, 10*time.Second)
		if d.Attempts != 5 || d.DeadReason != "" || d.LastError != "status 404" {
			t.Errorf("dead delivery attempts=%d dead_reason=%q last_error=%q, want 5, none, %q", d.Attempts, d.DeadReason, d.LastError, "status 404")
		}
		if n := web.Count(); n != 5 {
			t.Errorf("target got %d requests, want 5 (max_attempts)", n)
		}
		checkDeadShown(t, tm, row, "web", 5, "")
	})
}

// hookbox check refuses a bad permanent_status, naming the key, and one on
// a command target.
func TestFailure_CheckPermanentStatus(t *testing.T) {
	t.Parallel()
	for name, tt := range map[string]struct{ target, want string }{
		"Not an HTTP status": {`url = "http://127.0.0.1:9/"` + "\npermanent_status = [410, 99]", "target[t].permanent_status"},
		"A success":          {`url = "http://127.0.0.1:9/"` + "\npermanent_status = [200]", "target[t].permanent_status"},
		"On a command":       {`command = ["/bin/true"]` + "\npermanent_status = [410]", "target[t].permanent_status"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hookbox.toml")
			text := deliveryConfig + "\n[[target]]\nname = \"t\"\nsource = \"shop\"\n" + tt.target + "\n"
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			_, stderr, err := runCLI(t, "check", "--config", path)
			if err == nil || !strings.Contains(stderr+err.Error(), tt.want) {
				t.Errorf("check: err=%v stderr=%q, want a failure naming %s", err, stderr, tt.want)
			}
		})
	}
}
