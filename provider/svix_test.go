package provider_test

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"testing"
	"time"

	"hookbox/provider"
)

// clerk and resend are the standard scheme with their own defaults: the
// same checks, the same refusals, and the same secrets.
func TestSvixPresets(t *testing.T) {
	std, _ := provider.Lookup("standard")
	now := time.Unix(1700000000, 0)
	body := []byte(`{"type":"user.created","data":{"id":"user_123"}}`)
	sign := func(secret, id string) string {
		return "v1," + base64.StdEncoding.EncodeToString(mac(sha256.New, whsecKey(t, secret), id, ".", ts(now), ".", string(body)))
	}
	for _, name := range []string{"clerk", "resend"} {
		t.Run(name, func(t *testing.T) {
			p, _ := provider.Lookup(name)
			if p.EventID != std.EventID || p.Tolerance != 5*time.Minute {
				t.Errorf("event id %q, tolerance %s; want standard's %q and 5m", p.EventID, p.Tolerance, std.EventID)
			}
			if err := p.CheckSecret("whsec_not*base64!"); err == nil {
				t.Errorf("CheckSecret accepted a whsec_ secret that is not base64")
			}
			v := mustNew(t, provider.Options{Scheme: name, Secrets: []string{stdSecrets[0], stdSecrets[1]}})
			for _, tt := range []struct {
				name string
				h    map[string]string
				at   time.Time
				want error
			}{
				{"Svix headers", map[string]string{"svix-id": "msg_1", "svix-timestamp": ts(now), "svix-signature": sign(stdSecrets[1], "msg_1")}, now, nil},
				{"Webhook headers", map[string]string{"webhook-id": "msg_1", "webhook-timestamp": ts(now), "webhook-signature": sign(stdSecrets[0], "msg_1")}, now, nil},
				{"Unsigned webhook-id beside the signed svix-id", map[string]string{"svix-id": "msg_1", "webhook-id": "msg_2", "svix-timestamp": ts(now), "svix-signature": sign(stdSecrets[1], "msg_1")}, now, provider.ErrMalformed},
				{"Other secret", map[string]string{"svix-id": "msg_1", "svix-timestamp": ts(now), "svix-signature": sign(stdSecrets[2], "msg_1")}, now, provider.ErrMismatch},
				{"Ahead", map[string]string{"svix-id": "msg_1", "svix-timestamp": ts(now), "svix-signature": sign(stdSecrets[1], "msg_1")}, now.Add(-301 * time.Second), provider.ErrTimestamp},
			} {
				t.Run(tt.name, func(t *testing.T) {
					h := http.Header{}
					for k, val := range tt.h {
						h.Set(k, val)
					}
					wantErr(t, v.Verify(h, body, tt.at), tt.want, stdSecrets[0], stdSecrets[1])
				})
			}
		})
	}
}
