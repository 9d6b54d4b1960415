package receiver_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"hookbox/provider"
	"hookbox/receiver"
)

// Each stored event says which of its source's secrets verified it, for a
// scheme that signs the body and headers (github) and one that signs the
// URL (twilio); a source that checks nothing says none.
func TestServer_WhichSecretVerified(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	secrets := []string{"old-secret-1234", "new-secret-5678", "next-secret-9012"}
	var sources []receiver.Source
	for _, name := range []string{"github", "twilio"} {
		src, err := receiver.NewSource(name, 0, provider.Options{Scheme: name, Secrets: secrets})
		if err != nil {
			t.Fatal(err)
		}
		sources = append(sources, src)
	}
	open, err := receiver.NewSource("open", 0, provider.Options{Scheme: "none", EventID: "json:id"})
	if err != nil {
		t.Fatal(err)
	}
	sources = append(sources, open)
	rec := &recorder{}
	srv := receiver.New(receiver.Config{Sources: sources, Logger: zerolog.Nop(), Now: func() time.Time { return now }}, rec)

	send := func(scheme, secret, id string) {
		t.Helper()
		p, _ := provider.Lookup(scheme)
		s := p.Samples[0]
		body, err := provider.Fill(s.Body(), provider.Values{ID: id, Resource: s.Resource, Type: s.Type, At: now, Attempt: 1})
		if err != nil {
			t.Fatal(err)
		}
		r := &provider.Request{Method: http.MethodPost, URL: "http://example.com/hooks/" + scheme, Header: http.Header{}, Body: body}
		r.Header.Set("Content-Type", s.ContentTypeOr())
		p.SetHeaders(provider.Options{Scheme: scheme}, r.Header, provider.Event{ID: id, Type: s.Type, Attempt: 1})
		signer, err := provider.NewSigner(provider.Options{Scheme: scheme, Secrets: []string{secret}})
		if err != nil {
			t.Fatal(err)
		}
		if err := signer.Sign(r, now); err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodPost, "/hooks/"+scheme, bytes.NewReader(r.Body))
		req.Header = r.Header
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Fatalf("%s signed with %s: %d %s", scheme, secret, w.Code, w.Body)
		}
	}
	for _, scheme := range []string{"github", "twilio"} {
		for i, secret := range secrets {
			rec.got = nil
			send(scheme, secret, scheme+"-evt-"+secret)
			if len(rec.got) != 1 {
				t.Fatalf("%s: %d events stored, want 1", scheme, len(rec.got))
			}
			if got, want := rec.got[0].Verified, (provider.Match{Secret: i, Of: 3}); got != want {
				t.Errorf("%s signed with secret %d of 3: stored %+v (%s), want %+v", scheme, i+1, got, got, want)
			}
		}
	}
	rec.got = nil
	req := httptest.NewRequest(http.MethodPost, "/hooks/open", bytes.NewReader([]byte(`{"id":"e1"}`)))
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	if w.Code != http.StatusOK || len(rec.got) != 1 {
		t.Fatalf("unsigned source: %d %s, %d stored", w.Code, w.Body, len(rec.got))
	}
	if m := rec.got[0].Verified; m.Verified() {
		t.Errorf("unsigned source: stored %+v, want no secret", m)
	}
}
