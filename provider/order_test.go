package provider_test

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"hookbox/location"
	"hookbox/provider"
	"hookbox/refetch"
)

// Every preset's order key and version parse, come with the page that
// documents them, and find the resource's id in the preset's own samples;
// every fetch API names its docs and a rate refetch_rate would take.
func TestRegistry_OrderAndRefetch(t *testing.T) {
	for _, p := range provider.All() {
		t.Run(p.Name, func(t *testing.T) {
			if (p.OrderKey != "") != (p.OrderVersion != "") || (p.OrderKey != "") != (p.OrderDocs != "") {
				t.Fatalf("order key %q, version %q, docs %q: all three or none", p.OrderKey, p.OrderVersion, p.OrderDocs)
			}
			if p.OrderKey != "" {
				key, err := location.Parse(p.OrderKey, location.ID)
				if err != nil {
					t.Fatalf("OrderKey %q: %v", p.OrderKey, err)
				}
				if _, err := location.Parse(p.OrderVersion, location.ID); err != nil {
					t.Fatalf("OrderVersion %q: %v", p.OrderVersion, err)
				}
				found := false
				for _, s := range p.Samples {
					body, err := provider.Fill(s.Body(), provider.Values{ID: s.ID, Resource: s.Resource, Type: s.Type, At: time.Unix(1700000000, 0), Attempt: 1})
					if err != nil {
						t.Fatal(err)
					}
					if v, err := key.Find(&location.Request{Header: http.Header{}, Body: body}); err == nil && strings.HasSuffix(v, s.Resource) {
						found = true
					}
				}
				if !found && len(p.Samples) > 0 {
					t.Errorf("OrderKey %q finds the resource in none of the samples", p.OrderKey)
				}
			}
			if r := p.Refetch; r != nil {
				if r.Docs == "" || r.What == "" || r.Request == nil {
					t.Errorf("fetch API without docs, description or request: %+v", r)
				}
				for _, rate := range []string{r.Rate, rateFor(r, "sk_test_x"), rateFor(r, "sk_live_x")} {
					if _, err := refetch.ParseRate(rate); err != nil {
						t.Errorf("rate %q: %v", rate, err)
					}
				}
			}
		})
	}
}

func rateFor(r *provider.Refetch, cred string) string {
	if r.RateFor == nil {
		return r.Rate
	}
	return r.RateFor(cred)
}

// orderRows are the rows of the README's table of order keys, versions
// and fetch APIs, as the registry has them.
func orderRows() []string {
	var rows []string
	for _, p := range provider.All() {
		key, version, fetch, rate, docs := "-", "-", "-", "-", []string{}
		if p.OrderKey != "" {
			key, version = "`"+p.OrderKey+"`", "`"+p.OrderVersion+"`"
			docs = append(docs, "[order]("+p.OrderDocs+")")
		}
		if r := p.Refetch; r != nil {
			fetch, rate = r.What, "`"+r.Rate+"`"
			if r.RateNote != "" {
				rate += " (" + r.RateNote + ")"
			}
			docs = append(docs, "[API]("+r.Docs+")")
		}
		doc := "-"
		if len(docs) > 0 {
			doc = strings.Join(docs, " ")
		}
		rows = append(rows, "| `"+p.Name+"` | "+key+" | "+version+" | "+fetch+" | "+rate+" | "+doc+" |")
	}
	return rows
}

// The README's table of order keys, versions and refetch is the
// registry's, row by row and cell by cell.
func TestRegistry_OrderTable(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const heading = "### Order keys, versions and refetch by preset"
	const head = "| preset | order key | order version | refetch | refetch rate | docs |"
	text := string(b)
	h := strings.Index(text, heading)
	if h < 0 {
		t.Fatalf("README has no heading %q", heading)
	}
	i := strings.Index(text[h:], head)
	if i < 0 {
		t.Fatalf("README has no table %q under %q", head, heading)
	}
	var got []string
	for _, line := range strings.Split(text[h+i:], "\n")[2:] {
		if !strings.HasPrefix(line, "| `") {
			break
		}
		got = append(got, line)
	}
	want := orderRows()
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			t.Errorf("README's order table lacks the row\n%s", want[i])
		case i >= len(want):
			t.Errorf("README's order table has a row the registry has not:\n%s", got[i])
		case got[i] != want[i]:
			gc, wc := strings.Split(got[i], " | "), strings.Split(want[i], " | ")
			for j := range min(len(gc), len(wc)) {
				if gc[j] != wc[j] {
					t.Errorf("README's order table, row %d, cell %d: %q, want %q", i+1, j+1, gc[j], wc[j])
				}
			}
			if len(gc) != len(wc) {
				t.Errorf("README's order table row\n%s\nwant\n%s", got[i], want[i])
			}
		}
	}
}
