package config_test

import (
	"strings"
	"testing"
	"time"

	"hookbox/config"
	"hookbox/order"
	"hookbox/provider"
)

const srcHMAC = `
[[source]]
name = "h"
verify = "hmac"
secret = "x"
header = "X-Sig"
event_id = "json:id"
`

func TestParse_Order(t *testing.T) {
	const tgt = "\n[[target]]\nname = \"t\"\nsource = \"s\"\nurl = \"http://127.0.0.1/\"\n"
	cfg, err := config.Parse("c.toml", []byte(srcStripe+tgt+"order = \"coalesce\"\ncoalesce_wait = \"2s\"\n"+
		"[[target]]\nname = \"u\"\nsource = \"s\"\nurl = \"http://127.0.0.1/\"\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := provider.Lookup("stripe")
	if s := cfg.Sources[0]; p.OrderKey == "" || s.OrderKey != p.OrderKey || s.OrderVersion != p.OrderVersion {
		t.Errorf("stripe source: order_key %q, order_version %q; want the preset's %s, %s", s.OrderKey, s.OrderVersion, p.OrderKey, p.OrderVersion)
	}
	if got := cfg.Targets[0].Lane(); got != (order.Lane{Mode: order.Coalesce, Wait: 2 * time.Second}) {
		t.Errorf("target t: %+v, want coalesce waiting 2s", got)
	}
	if got := cfg.Targets[1].Order; got != "none" {
		t.Errorf("target u: order %q, want none by default", got)
	}
	if lanes := cfg.Lanes(); len(lanes) != 1 || lanes["t"].Mode != order.Coalesce {
		t.Errorf("Lanes() = %v, want only t", lanes)
	}

	cfg, err = config.Parse("c.toml", []byte(srcHMAC+"order_key = \"json:data.id , header:X-Res\"\norder_version = \"json:seq\"\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Sources[0]; s.OrderKey != "json:data.id,header:X-Res" || s.OrderVersion != "json:seq" {
		t.Errorf("hmac source: order_key %q, order_version %q", s.OrderKey, s.OrderVersion)
	}

	for _, c := range []struct {
		name, doc, field, msg string
	}{
		{"Unknown order", srcStripe + tgt + "order = \"lifo\"\n", "target[t].order", "unknown order"},
		{"Coalesce wait without coalesce", srcStripe + tgt + "order = \"fifo\"\ncoalesce_wait = \"1s\"\n", "target[t].coalesce_wait", "only with order"},
		{"Order without any key", strings.Replace(srcHMAC, `"h"`, `"s"`, 1) + tgt + "order = \"latest\"\n", "target[t].order", "order_key"},
		{"Auto order key", srcHMAC + "order_key = \"auto\"\n", "source[h].order_key", `"auto" is only for`},
		{"Body hash version", srcHMAC + "order_key = \"json:k\"\norder_version = \"body-sha256\"\n", "source[h].order_version", "body-sha256"},
		{"Version without key", srcHMAC + "order_version = \"json:v\"\n", "source[h].order_version", "needs order_key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Parse("c.toml", []byte(c.doc), env(nil))
			ps := problems(t, err)
			if len(ps) != 1 || ps[0].Field != c.field || !strings.Contains(ps[0].Msg, c.msg) {
				t.Fatalf("problems %v, want one on %s saying %q", err, c.field, c.msg)
			}
		})
	}
}
