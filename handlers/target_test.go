//go:build unix

package handlers_test

import (
	"context"
	"net/http"
	"net/http/httptest"
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

	t.Run("Neither url nor command", func(t *testing.T) {
		if _, err := handlers.Targets(config.Config{Targets: []config.Target{{Name: "x"}}}, ""); err == nil {
			t.Error("a target with neither url nor command was built, want an error")
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
