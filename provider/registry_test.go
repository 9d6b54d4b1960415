package provider_test

import (
	"bufio"
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"hookbox/location"
	"hookbox/provider"
)

// TestRegistry walks every scheme a source may name and proves it is
// constructible with each of its settings, that its defaults parse and are
// the ones the README's preset table documents, and that the real verifier
// runs at least one valid and (for a scheme that checks anything) one
// tampered vector of testdata, each with the outcome the vector expects.
func TestRegistry(t *testing.T) {
	vectors := loadAllVectors(t)
	documented := presetTable(t)
	for _, p := range provider.All() {
		t.Run(p.Name, func(t *testing.T) {
			o := provider.Options{Scheme: p.Name}
			if !p.Unsigned {
				// whsec_ and base64: every scheme without a format takes it.
				o.Secrets = []string{cmp.Or(p.SecretExample, stdSecrets[0])}
				if err := p.CheckSecret(o.Secrets[0]); err != nil {
					t.Errorf("CheckSecret(%q): %v", o.Secrets[0], err)
				}
			}
			if p.Header != "" {
				o.Header = "X-Test-Header"
			}
			mustNew(t, o)
			for _, s := range p.Settings {
				for _, c := range s.Choices {
					oc := o
					switch s.Key {
					case "algorithm":
						oc.Algorithm = c
					case "encoding":
						oc.Encoding = c
					default:
						t.Fatalf("setting %s has choices this test cannot set", s.Key)
					}
					mustNew(t, oc)
				}
			}

			if p.EventID != "" {
				if _, err := location.Parse(p.EventID, location.ID); err != nil {
					t.Errorf("EventID %q: %v", p.EventID, err)
				}
			}
			if p.EventType != "" {
				if _, err := location.Parse(p.EventType, location.Type); err != nil {
					t.Errorf("EventType %q: %v", p.EventType, err)
				}
			}
			for _, h := range p.Redact {
				if h != http.CanonicalHeaderKey(h) {
					t.Errorf("Redact %q, want the canonical %q", h, http.CanonicalHeaderKey(h))
				}
			}
			if p.Unsigned && (p.Tolerance != 0 || p.Header != "" || len(p.Redact) > 0 || p.Handshake != nil || p.SignsURL) {
				t.Errorf("unsigned scheme with a tolerance, header, redaction, handshake or signed URL: %+v", p)
			}
			v := mustNew(t, o)
			if _, isRV := v.(provider.RequestVerifier); p.SignsURL && !isRV {
				t.Errorf("scheme signs the URL but its verifier is no RequestVerifier")
			}
			if o.PublicURL = "https://hooks.example.com/hooks/s"; !p.SignsURL {
				if _, err := provider.New(o); err == nil {
					t.Errorf("New accepted a public_url for a scheme that signs no URL")
				}
			} else {
				mustNew(t, o)
			}
			if !p.Unsigned && p.Header == "" && len(p.Redact) == 0 {
				t.Errorf("scheme with fixed headers lists none to redact")
			}

			row, ok := documented[p.Name]
			if !ok {
				t.Fatalf("README's preset table has no row for %s", p.Name)
			}
			if row[0] != p.Signature || p.Signature == "" {
				t.Errorf("README signature header %q, want the registry's %q", row[0], p.Signature)
			}
			if want := docCell(p.EventID, "(set `event_id`)"); row[1] != want {
				t.Errorf("README event id %q, want %q", row[1], want)
			}
			if want := docCell(p.EventType, "(optional)"); row[2] != want {
				t.Errorf("README event type %q, want %q", row[2], want)
			}
			wantTol := p.ToleranceText()
			if wantTol == "" {
				wantTol = "-"
			}
			if row[3] != wantTol {
				t.Errorf("README tolerance %q, want %q", row[3], wantTol)
			}
			wantDocs := "-"
			if p.Docs != "" {
				wantDocs = "[docs](" + p.Docs + ")"
			}
			if row[4] != wantDocs {
				t.Errorf("README docs %q, want %q", row[4], wantDocs)
			}
			if p.Docs == "" && p.Header == "" && !p.Unsigned {
				t.Errorf("a provider preset without a docs link")
			}

			valid, invalid := 0, 0
			for _, c := range vectors {
				if vectorScheme(c) != p.Name {
					continue
				}
				err := verifyCase(mustNew(t, vectorOptions(t, c)), c)
				if got := err == nil; got != c.ExpectValid {
					t.Errorf("vector %s: valid=%t (err=%v), want %t", c.Name, got, err, c.ExpectValid)
				}
				checkErr(t, err, c.Secret)
				if c.ExpectValid {
					valid++
				} else {
					invalid++
				}
			}
			switch {
			case valid == 0:
				t.Errorf("no valid vector in testdata")
			case p.Unsigned && invalid > 0:
				t.Errorf("%d vectors an unsigned scheme should refuse", invalid)
			case !p.Unsigned && invalid == 0:
				t.Errorf("no tampered vector in testdata")
			}
		})
	}
	for name := range documented {
		if _, ok := provider.Lookup(name); !ok {
			t.Errorf("README's preset table has a row for %s, which is not in the registry", name)
		}
	}
}

func docCell(loc, none string) string {
	if loc == "" {
		return none
	}
	return "`" + loc + "`"
}

// presetTable reads the README's preset table: the cells after the name
// (signature header, event id, event type, tolerance, docs) by the
// preset's name.
func presetTable(t *testing.T) map[string][5]string {
	t.Helper()
	f, err := os.Open("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string][5]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "| preset | signature header | event id | event type | tolerance | docs |":
			in = true
		case in && strings.HasPrefix(line, "| `"):
			cells := strings.Split(strings.Trim(line, "| "), " | ")
			if len(cells) != 6 {
				t.Fatalf("README preset row %q has %d cells, want 6", line, len(cells))
			}
			rows[strings.Trim(cells[0], "`")] = [5]string{cells[1], cells[2], cells[3], cells[4], cells[5]}
		case in && !strings.HasPrefix(line, "|"):
			in = false
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal("README has no preset table")
	}
	return rows
}

// A provider file whose Provider is left out of the registry table would
// be silently unknown: every Provider value declared in the package is in
// the table.
func TestRegistry_HasEveryProvider(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if id, isIdent := lit.Type.(*ast.Ident); !isIdent || id.Name != "Provider" {
				return true
			}
			for _, e := range lit.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if key, isIdent := kv.Key.(*ast.Ident); ok && isIdent && key.Name == "Name" {
					if v, isLit := kv.Value.(*ast.BasicLit); isLit {
						name, _ := strconv.Unquote(v.Value)
						declared[name] = true
					}
				}
			}
			return true
		})
	}
	if got, want := slices.Sorted(maps.Keys(declared)), slices.Sorted(slices.Values(provider.Names())); !slices.Equal(got, want) {
		t.Fatalf("Provider values declared %v, registered %v", got, want)
	}
}

func TestLookup(t *testing.T) {
	for _, name := range provider.Names() {
		if p, ok := provider.Lookup(name); !ok || p.Name != name {
			t.Errorf("Lookup(%q) = %q, %t", name, p.Name, ok)
		}
	}
	for _, name := range []string{"", "Stripe", "paddle-classic", "standard-webhooks"} {
		if _, ok := provider.Lookup(name); ok {
			t.Errorf("Lookup(%q) found a provider, want none", name)
		}
	}
	// The order check's messages list: the first presets as they were
	// introduced, newer presets after them, the generic schemes last.
	names := strings.Join(provider.Names(), ", ")
	if first := "stripe, github, shopify, slack, standard, gitlab, "; !strings.HasPrefix(names, first) {
		t.Errorf("Names() = %s, want it to start with %s", names, first)
	}
	if last := ", hmac, token, none"; !strings.HasSuffix(names, last) {
		t.Errorf("Names() = %s, want it to end with %s", names, last)
	}
}

func TestRedactHeaders(t *testing.T) {
	gitlab, _ := provider.Lookup("gitlab")
	if got := gitlab.RedactHeaders(provider.Options{Scheme: "gitlab"}); !slices.Equal(got, []string{"X-Gitlab-Token"}) {
		t.Errorf("gitlab redacts %v, want [X-Gitlab-Token]", got)
	}
	for _, name := range []string{"hmac", "token"} {
		p, _ := provider.Lookup(name)
		if got := p.RedactHeaders(provider.Options{Scheme: name, Header: "x-my-sig"}); !slices.Contains(got, "x-my-sig") {
			t.Errorf("%s redacts %v, want the configured header among them", name, got)
		}
	}
}

// handshake runs a provider's handshake, built for o, on a request.
func handshake(t *testing.T, name string, o provider.Options, h http.Header, body string) (provider.Reply, bool) {
	t.Helper()
	p, _ := provider.Lookup(name)
	if p.Handshake == nil {
		t.Fatalf("%s has no handshake", name)
	}
	o.Scheme = name
	if h == nil {
		h = http.Header{}
	}
	return p.Handshake(o)(&location.Request{Header: h, Body: []byte(body)})
}

func TestSlackHandshake(t *testing.T) {
	o := provider.Options{Secrets: []string{"s"}}
	reply, ok := handshake(t, "slack", o, nil, `{"type":"url_verification","challenge":"c1","token":"t"}`)
	if !ok || reply.ContentType != "application/json" || string(reply.Body) != `{"challenge":"c1"}`+"\n" {
		t.Fatalf("url_verification: reply %q %q, %t; want {challenge: c1} as JSON", reply.ContentType, reply.Body, ok)
	}
	reply, ok = handshake(t, "slack", o, nil, "token=gIkuvaNzQIHg97ATvDxqgjtO&ssl_check=1")
	if !ok || len(reply.Body) != 0 {
		t.Fatalf("ssl_check: reply %q, %t; want an empty 200", reply.Body, ok)
	}
	for _, body := range []string{`{"type":"event_callback","challenge":"c1"}`, `["url_verification"]`, `"url_verification"`, ``,
		"command=%2Fweather&text=ssl_check%3D1", "ssl_check=0&token=t", "ssl_check=1;x"} {
		if reply, ok := handshake(t, "slack", o, nil, body); ok {
			t.Errorf("%q answered %q, want no handshake", body, reply.Body)
		}
	}
}

// fireRows are the rows of the README's table of what hookbox fire sends
// as each preset: its answer timeout, its retries (the storm), its samples
// and where their version is.
func fireRows() []string {
	var rows []string
	for _, p := range provider.All() {
		timeout := p.TimeoutOr().String()
		if p.TimeoutNote != "" {
			timeout += " (" + p.TimeoutNote + ")"
		} else if p.Timeout == 0 {
			timeout += " (not published)"
		}
		var types []string
		for _, s := range p.Samples {
			if s.Type == "" {
				types = append(types, "(untyped)")
			} else {
				types = append(types, "`"+s.Type+"`")
			}
		}
		version := "-"
		if v := p.Samples[0].Version; v != "" {
			version = "`" + v + "`"
		}
		rows = append(rows, fmt.Sprintf("| `%s` | %s | %s | %s | %s |", p.Name, timeout, p.Retries.Note, strings.Join(types, ", "), version))
	}
	return rows
}

// The README's fire table is the registry's: every preset's row, as
// fireRows writes it.
func TestRegistry_FireTable(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const head = "| preset | answer timeout | retries (the storm) | samples (`--type`) | version |"
	text := string(b)
	i := strings.Index(text, head)
	if i < 0 {
		t.Fatalf("README has no table %q", head)
	}
	var got []string
	for _, line := range strings.Split(text[i:], "\n")[2:] {
		if !strings.HasPrefix(line, "| `") {
			break
		}
		got = append(got, line)
	}
	want := fireRows()
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			t.Errorf("README's fire table lacks the row\n%s", want[i])
		case i >= len(want):
			t.Errorf("README's fire table has a row the registry has not:\n%s", got[i])
		case got[i] != want[i]:
			t.Errorf("README's fire table row\n%s\nwant\n%s", got[i], want[i])
		}
	}
}
