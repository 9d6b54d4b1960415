package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hookbox/config"
)

func TestParse_Refetch(t *testing.T) {
	const tgt = "\n[[target]]\nname = \"t\"\nsource = \"s\"\nurl = \"http://127.0.0.1:9000/\"\n"
	getenv := env(map[string]string{"STRIPE_API_KEY": "sk_test_abc", "BAD_KEY": "a\nb"})
	cfg, err := config.Parse("c.toml", []byte(srcStripe+tgt+
		"refetch = \"stripe\"\nrefetch_auth_env = \"STRIPE_API_KEY\"\nrefetch_rate = \"10/s\"\nrefetch_base_url = \"http://127.0.0.1:9001/\"\n"), getenv)
	if err != nil {
		t.Fatal(err)
	}
	tg := cfg.Targets[0]
	if tg.Refetch != "stripe" || tg.RefetchCredential != "sk_test_abc" || tg.RefetchRate != "10/s" || tg.RefetchBaseURL != "http://127.0.0.1:9001/" {
		t.Errorf("target = %+v", tg)
	}
	if _, err := config.Parse("c.toml", []byte(srcStripe+tgt+"refetch_url = \"https://api.example.com/v1/things/{json:data.object.id}\"\n"), getenv); err != nil {
		t.Errorf("refetch_url without a credential: %v", err)
	}
	// The read commands resolve no secret: an unset variable is no error.
	if _, err := config.LoadWithoutSecrets(writeTemp(t, srcStripe+tgt+"refetch = \"stripe\"\nrefetch_auth_env = \"UNSET_KEY\"\n")); err != nil {
		t.Errorf("LoadWithoutSecrets: %v", err)
	}

	for _, c := range []struct {
		name, keys, field, value, msg string
	}{
		{"unknown preset", "refetch = \"strpie\"\nrefetch_auth_env = \"STRIPE_API_KEY\"\n", "target[t].refetch", "strpie", "no such preset; the presets with a fetch API: stripe, github, shopify, mercadopago"},
		{"preset without a fetch API", "refetch = \"slack\"\nrefetch_auth_env = \"STRIPE_API_KEY\"\n", "target[t].refetch", "slack", "no fetch API"},
		{"preset of another source", "refetch = \"github\"\nrefetch_auth_env = \"STRIPE_API_KEY\"\n", "target[t].refetch", "github", `source s is verify = "stripe"`},
		{"both", "refetch = \"stripe\"\nrefetch_auth_env = \"STRIPE_API_KEY\"\nrefetch_url = \"https://api.example.com/{json:id}\"\n", "target[t].refetch_url", "", "not both"},
		{"no credential", "refetch = \"stripe\"\n", "target[t].refetch_auth_env", "", "required with refetch"},
		{"unset variable", "refetch = \"stripe\"\nrefetch_auth_env = \"UNSET_KEY\"\n", "target[t].refetch_auth_env", "UNSET_KEY", "environment variable UNSET_KEY is unset or empty"},
		{"control character", "refetch = \"stripe\"\nrefetch_auth_env = \"BAD_KEY\"\n", "target[t].refetch_auth_env", "BAD_KEY", "control character"},
		{"bad variable name", "refetch = \"stripe\"\nrefetch_auth_env = \"1KEY\"\n", "target[t].refetch_auth_env", "1KEY", "not a valid environment variable name"},
		{"bad rate", "refetch = \"stripe\"\nrefetch_auth_env = \"STRIPE_API_KEY\"\nrefetch_rate = \"25\"\n", "target[t].refetch_rate", "25", "N/s, N/m or N/h"},
		{"bad base url", "refetch = \"stripe\"\nrefetch_auth_env = \"STRIPE_API_KEY\"\nrefetch_base_url = \"api.stripe.com\"\n", "target[t].refetch_base_url", "api.stripe.com", "absolute"},
		{"base url with refetch_url", "refetch_url = \"https://api.example.com/{json:id}\"\nrefetch_base_url = \"https://proxy.example.com\"\n", "target[t].refetch_base_url", "https://proxy.example.com", "only with refetch"},
		{"unclosed placeholder", "refetch_url = \"https://api.example.com/{json:id\"\n", "target[t].refetch_url", "https://api.example.com/{json:id", "without its }"},
		{"header placeholder", "refetch_url = \"https://api.example.com/{header:X-Id}\"\n", "target[t].refetch_url", "https://api.example.com/{header:X-Id}", "want {json:a.b}"},
		{"placeholder in the host", "refetch_url = \"https://{json:shop}.example.com/x\"\n", "target[t].refetch_url", "https://{json:shop}.example.com/x", "host"},
		{"rate without refetch", "refetch_rate = \"5/s\"\n", "target[t].refetch_rate", "", "only with refetch or refetch_url"},
		{"credential without refetch", "refetch_auth_env = \"STRIPE_API_KEY\"\n", "target[t].refetch_auth_env", "", "only with refetch or refetch_url"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Parse("c.toml", []byte(srcStripe+tgt+c.keys), getenv)
			ps := problems(t, err)
			if len(ps) != 1 {
				t.Fatalf("problems %v, want one on %s", err, c.field)
			}
			p := ps[0]
			if p.Field != c.field || p.Value != c.value || !strings.Contains(p.Msg, c.msg) {
				t.Errorf("got %s = %q: %s; want %s = %q: …%s…", p.Field, p.Value, p.Msg, c.field, c.value, c.msg)
			}
			if p.Line == 0 {
				t.Errorf("%v: no line", p)
			}
		})
	}
}

func writeTemp(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
