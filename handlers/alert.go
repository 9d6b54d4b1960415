package handlers

import (
	"context"
	"encoding/json"
	"fmt"

	"hookbox/config"
	"hookbox/queue"
)

// Notifier returns what sends the alerts of a: as JSON POSTed to a.URL, or
// on a.Command's stdin (with HOOKBOX_ALERT_KIND, HOOKBOX_ALERT_STATE,
// HOOKBOX_ALERT_SOURCE, HOOKBOX_ALERT_EVENT_ID and HOOKBOX_ALERT_TARGET in
// its environment), each send bounded by
// a.Timeout. It returns nil when a sets neither: no alerts.
func Notifier(a config.Alert) queue.Notifier {
	timeout := a.Timeout.D()
	switch {
	case a.URL != "":
		return &alertNotifier{url: NewURL(a.URL, timeout)}
	case len(a.Command) > 0:
		return &alertNotifier{cmd: NewCommand(a.Command, nil, timeout)}
	}
	return nil
}

// alertNotifier sends alerts as JSON to a URL or on a command's stdin.
type alertNotifier struct {
	url *URL
	cmd *Command
}

// Notify sends one alert; its error (an *Error) means it should be tried again.
func (n *alertNotifier) Notify(ctx context.Context, a queue.Alert) error {
	body, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("encode alert: %w", err)
	}
	if n.url != nil {
		_, err = n.url.Post(ctx, "application/json", body)
	} else {
		kind, state := a.Kind, a.State
		if kind == "" {
			kind, state = queue.KindDead, queue.Firing
		}
		_, err = n.cmd.Run(ctx, map[string]string{
			"HOOKBOX_ALERT_KIND":     kind,
			"HOOKBOX_ALERT_STATE":    state,
			"HOOKBOX_ALERT_SOURCE":   a.Source,
			"HOOKBOX_ALERT_EVENT_ID": a.EventID,
			"HOOKBOX_ALERT_TARGET":   a.Target,
		}, body)
	}
	return err
}
