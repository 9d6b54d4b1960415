package bench_test

import (
	"bytes"
	"net/http"
	"os"
	"regexp"
	"slices"
	"testing"

	"hookbox/bench"
)

// The wrk script (github.lua) sends what the generator sends: the body in
// testdata is the generator's default one, and the script's headers are the
// generator's, with the same values but for the signature (given to the
// script) and the delivery id.
func TestGitHubLua(t *testing.T) {
	body, err := os.ReadFile("testdata/push-1024.json")
	if err != nil {
		t.Fatal(err)
	}
	if want := bench.PushBody(1024); !bytes.Equal(body, want) {
		t.Errorf("testdata/push-1024.json is not bench.PushBody(1024): regenerate it from there")
	}
	lua, err := os.ReadFile("github.lua")
	if err != nil {
		t.Fatal(err)
	}
	got := http.Header{}
	for _, m := range regexp.MustCompile(`(?m)^\s*"([A-Za-z0-9-]+): ([^"\\]*)`).FindAllSubmatch(lua, -1) {
		got.Add(string(m[1]), string(m[2]))
	}
	req := bench.NewGitHubRequest("s", 1024)
	var names []string
	for k := range req.Header {
		names = append(names, k)
		switch k {
		case "X-Hub-Signature-256":
			if v := got.Get(k); v != "sha256=" {
				t.Errorf("script's %s: %q, want sha256= and the signature given", k, v)
			}
		default:
			if v, want := got.Get(k), req.Header.Get(k); v != want {
				t.Errorf("script's %s: %q, want %q as the generator sends", k, v, want)
			}
		}
	}
	names = append(names, "Host", "Content-Length", http.CanonicalHeaderKey(bench.IDHeader))
	var have []string
	for k := range got {
		have = append(have, k)
	}
	slices.Sort(names)
	slices.Sort(have)
	if !slices.Equal(have, names) {
		t.Errorf("script's headers %v, want %v", have, names)
	}
}
