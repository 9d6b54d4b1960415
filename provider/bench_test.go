package provider_test

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"hookbox/provider"
)

func BenchmarkVerify(b *testing.B) {
	body := bytes.Repeat([]byte(`{"k":"v"},`), 103)[:1024]
	now := time.Unix(1700000000, 0)
	none := fixture{
		name: "none", opts: provider.Options{Scheme: "none"},
		sign: func(testing.TB, string, []byte, time.Time) (http.Header, string) { return http.Header{}, "" },
	}
	for _, f := range append(fixtures(), none) {
		b.Run(f.name, func(b *testing.B) {
			v := mustNew(b, withSecrets(f.opts, f.secrets[0]))
			h, _ := f.sign(b, f.secrets[0], body, now)
			b.ReportAllocs()
			if f.signsBody {
				b.SetBytes(int64(len(body)))
			}
			for b.Loop() {
				if err := v.Verify(h, body, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVerifyRotation is BenchmarkVerify for a source with two
// secrets whose request is signed with the second: the most a rotation
// costs, every scheme's check run for the first secret in vain.
func BenchmarkVerifyRotation(b *testing.B) {
	body := bytes.Repeat([]byte(`{"k":"v"},`), 103)[:1024]
	now := time.Unix(1700000000, 0)
	for _, f := range fixtures() {
		b.Run(f.name, func(b *testing.B) {
			v := mustNew(b, withSecrets(f.opts, f.secrets[0], f.secrets[1]))
			h, _ := f.sign(b, f.secrets[1], body, now)
			b.ReportAllocs()
			if f.signsBody {
				b.SetBytes(int64(len(body)))
			}
			for b.Loop() {
				if err := v.Verify(h, body, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
