package provider_test

import (
	"net/http"
	"strings"
	"testing"

	"hookbox/provider"
)

// A secret Telegram's setWebhook would refuse is refused at once, by
// check and by New, without being quoted.
func TestTelegram_Secret(t *testing.T) {
	p, _ := provider.Lookup("telegram")
	for _, s := range []string{"a", "Bot_Token-1", strings.Repeat("x", 256)} {
		if err := p.CheckSecret(s); err != nil {
			t.Errorf("CheckSecret(%q): %v, want nil", s, err)
		}
	}
	for _, s := range []string{strings.Repeat("x", 257), "has space", "tok=en", "tökén"} {
		err := p.CheckSecret(s)
		if err == nil {
			t.Errorf("CheckSecret(%q) = nil, want an error", s)
			continue
		}
		if strings.Contains(err.Error(), s) {
			t.Errorf("CheckSecret error %q quotes the secret", err)
		}
		if _, err := provider.New(provider.Options{Scheme: "telegram", Secrets: []string{"ok", s}}); err == nil || strings.Contains(err.Error(), s) {
			t.Errorf("New with secret %q: %v, want an error not quoting it", s, err)
		}
	}
}

func TestTelegram_Verify(t *testing.T) {
	v := mustNew(t, provider.Options{Scheme: "telegram", Secrets: []string{"old_token", "new_token"}})
	for _, tt := range []struct {
		token string
		want  error
	}{{"new_token", nil}, {"old_token", nil}, {"", provider.ErrMissing}, {"new_token2", provider.ErrMismatch}} {
		h := http.Header{}
		if tt.token != "" {
			h.Set("X-Telegram-Bot-Api-Secret-Token", tt.token)
		}
		wantErr(t, v.Verify(h, []byte(`{"update_id":1}`), testNow), tt.want, "old_token", "new_token")
	}
}
