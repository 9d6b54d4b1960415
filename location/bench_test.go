package location_test

import (
	"bytes"
	"net/http"
	"testing"

	"hookbox/location"
)

// benchBody is a 1 KiB JSON webhook with its id and type at the top level.
var benchBody = func() []byte {
	b := []byte(`{"id":"evt_1NfLz2","type":"invoice.paid","data":{"object":{"note":"`)
	b = append(b, bytes.Repeat([]byte("x"), 1024-len(b)-4)...)
	return append(b, `"}}}`...)
}()

func BenchmarkFind(b *testing.B) {
	h := http.Header{}
	h.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	for _, tc := range []struct{ name, loc string }{
		{"header", "header:X-GitHub-Delivery"},
		{"json", "json:id"},
		{"json-nested", "json:data.object.note"},
		{"body-sha256", "body-sha256"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			loc, err := location.Parse(tc.loc, location.ID)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				// A fresh Request per request, as the receiver does.
				r := location.Request{Header: h, Body: benchBody}
				if _, err := loc.Find(&r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
