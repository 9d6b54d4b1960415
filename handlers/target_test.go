//go:build unix

package handlers_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"hookbox/config"
	"hookbox/handlers"
	"hookbox/queue"
)

// mustTargets builds the queue targets of cfg's targets, by name.
func mustTargets(t *testing.T, targets ...config.Target) map[string]queue.Target {
	t.Helper()
	list, err := handlers.Targets(config.Config{Targets: targets}, "/var/lib/hookbox/hookbox.db")
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]queue.Target, len(list))
	for _, qt := range list {
		out[qt.Name] = qt
	}
	return out
}

func testJob() *queue.Job {
	return &queue.Job{EventID: "evt_1", Source: "shop", Type: "order.created", Attempt: 1, ReceivedAt: time.Now(), Body: []byte(`{}`)}
}

func TestTargets(t *testing.T) {
	t.Run("Url target", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		defer srv.Close()
		qt := mustTargets(t, config.Target{Name: "web", URL: srv.URL, MaxAttempts: 3})["web"]
		if qt.MaxAttempts != 3 {
			t.Errorf("max attempts=%d, want 3", qt.MaxAttempts)
		}
		out := qt.Handler.Handle(context.Background(), testJob())
		if out.Err == nil || out.HTTPStatus != http.StatusServiceUnavailable || out.RetryAfter != 7*time.Second || out.ExitCode != nil {
			t.Errorf("outcome=%+v, want a failure with status 503, retry after 7s and no exit code", out)
		}
	})

	t.Run("Command target", func(t *testing.T) {
		script := mustScript(t, `echo "$HOOKBOX_TARGET $HOOKBOX_STORE $HOOKBOX_SOURCE"; exit 3`)
		qt := mustTargets(t, config.Target{Name: "script", Command: []string{script}})["script"]
		out := qt.Handler.Handle(context.Background(), testJob())
		if out.Err == nil || out.ExitCode == nil || *out.ExitCode != 3 || out.HTTPStatus != 0 {
			t.Fatalf("outcome=%+v, want a failure with exit code 3", out)
		}
		if want := "script /var/lib/hookbox/hookbox.db shop\n"; out.Output != want {
			t.Errorf("output=%q, want %q (the target's name, the store, the event's source)", out.Output, want)
		}
	})

	t.Run("Command target killed at its timeout", func(t *testing.T) {
		script := mustScript(t, `sleep 5`)
		qt := mustTargets(t, config.Target{Name: "slow", Command: []string{script}, Timeout: config.Duration(200 * time.Millisecond)})["slow"]
		out := qt.Handler.Handle(context.Background(), testJob())
		// Killed, it has no exit code to show: the error says what happened.
		if out.Err == nil || !strings.Contains(out.Err.Error(), "timeout after 200ms") || out.ExitCode != nil {
			t.Fatalf("outcome=%+v, want a timeout and no exit code", out)
		}
	})

	t.Run("Neither url nor command", func(t *testing.T) {
		if _, err := handlers.Targets(config.Config{Targets: []config.Target{{Name: "x"}}}, ""); err == nil {
			t.Error("a target with neither url nor command was built, want an error")
		}
	})
}

// Only what the target declares permanent reaches the pool as a
// *queue.PermanentError: a command's exit 65 and a status in the URL
// target's permanent_status. Everything else, a bad certificate included,
// is left to be retried.
func TestTargets_Permanent(t *testing.T) {
	permanent := func(out queue.Outcome) string {
		var pe *queue.PermanentError
		if errors.As(out.Err, &pe) {
			return pe.Reason
		}
		return ""
	}
	t.Run("Command exit codes", func(t *testing.T) {
		script := mustScript(t, `exit "$CODE"`)
		for code, want := range map[string]string{"65": "exit 65", "75": "", "1": "", "3": ""} {
			qt := mustTargets(t, config.Target{Name: "script", Command: []string{script}, Env: map[string]string{"CODE": code}})["script"]
			out := qt.Handler.Handle(context.Background(), testJob())
			if out.Err == nil {
				t.Fatalf("exit %s: no failure", code)
			}
			if got := permanent(out); got != want {
				t.Errorf("exit %s: permanent reason %q, want %q", code, got, want)
			}
		}
	})
	t.Run("Url statuses", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			code, _ := strconv.Atoi(r.URL.Query().Get("code"))
			w.WriteHeader(code)
		}))
		defer srv.Close()
		for code, want := range map[int]string{410: "status 410", 422: "status 422", 404: "", 500: "", 503: ""} {
			qt := mustTargets(t, config.Target{Name: "web", URL: srv.URL + "/?code=" + strconv.Itoa(code), PermanentStatus: []int{410, 422}})["web"]
			out := qt.Handler.Handle(context.Background(), testJob())
			if out.Err == nil {
				t.Fatalf("status %d: no failure", code)
			}
			if got := permanent(out); got != want {
				t.Errorf("status %d: permanent reason %q, want %q", code, got, want)
			}
			if want != "" && out.Err.Error() != "status "+strconv.Itoa(code)+" (permanent_status)" {
				t.Errorf("status %d: error %q, want the attempt's own message", code, out.Err)
			}
		}
		// Without permanent_status no status is permanent.
		qt := mustTargets(t, config.Target{Name: "web", URL: srv.URL + "/?code=410"})["web"]
		if out := qt.Handler.Handle(context.Background(), testJob()); out.Err == nil || permanent(out) != "" {
			t.Errorf("410 without permanent_status: %v, want a failure to retry", out.Err)
		}
	})
	t.Run("Certificate error", func(t *testing.T) {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
		srv.StartTLS()
		defer srv.Close()
		qt := mustTargets(t, config.Target{Name: "web", URL: srv.URL, PermanentStatus: []int{410}})["web"]
		out := qt.Handler.Handle(context.Background(), testJob())
		if out.Err == nil || !strings.Contains(out.Err.Error(), "certificate") {
			t.Fatalf("error %v, want a certificate error", out.Err)
		}
		if got := permanent(out); got != "" {
			t.Errorf("certificate error: permanent reason %q, want none: a renewed certificate mends it", got)
		}
	})
}

func TestNotifier(t *testing.T) {
	if n := handlers.Notifier(config.Alert{}); n != nil {
		t.Errorf("Notifier without url or command = %v, want nil", n)
	}
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("Content-Type")
	}))
	defer srv.Close()
	n := handlers.Notifier(config.Alert{URL: srv.URL, Timeout: config.Duration(5 * time.Second)})
	if err := n.Notify(context.Background(), queue.Alert{Source: "shop", EventID: "evt_1"}); err != nil {
		t.Fatal(err)
	}
	if ct := <-got; ct != "application/json" {
		t.Errorf("alert Content-Type=%q, want application/json", ct)
	}
}
