package receiver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Memory follows the bytes that arrive, not the Content-Length claimed: a
// client claiming 1 MiB and sending little (or nothing, for the read
// timeout) must not make each connection reserve 1 MiB before the
// signature is even checked.
func TestReadBody_ReservesForTheBytesNotTheClaim(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/hooks/x", strings.NewReader(`{"id":"e1"}`))
	r.ContentLength = 1 << 20 // claimed; 11 bytes come
	body, err := readBody(httptest.NewRecorder(), r, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if string(body) != `{"id":"e1"}` {
		t.Fatalf("body %q", body)
	}
	if cap(body) > initialBody+1 {
		t.Errorf("reserved %d bytes for an 11-byte body claiming 1 MiB, want at most %d", cap(body), initialBody+1)
	}

	// A body that really is large still reads whole.
	big := strings.Repeat("x", 300<<10)
	r = httptest.NewRequest(http.MethodPost, "/hooks/x", strings.NewReader(big))
	if body, err := readBody(httptest.NewRecorder(), r, 1<<20); err != nil || string(body) != big {
		t.Fatalf("300 KiB body: %d bytes, %v", len(body), err)
	}
}

// The credential check runs for every header of every request: it must not
// allocate, short names or long.
func TestCredentialHeader_NoAllocation(t *testing.T) {
	if !credentialHeader("X-Hub-Signature-256") || credentialHeader("X-Github-Delivery") {
		t.Fatal("credentialHeader misjudges the GitHub headers")
	}
	long := "X-" + strings.Repeat("Very-Long-", 8) + "Api-Key"
	if !credentialHeader(long) {
		t.Fatalf("credentialHeader(%q) = false, want true", long)
	}
	if n := testing.AllocsPerRun(100, func() {
		credentialHeader("X-Hub-Signature-256")
		credentialHeader("Content-Type")
		credentialHeader(long)
	}); n > 1 { // the long name's copy only
		t.Errorf("credentialHeader allocates %v times a call set, want at most 1 (a name over 64 bytes)", n)
	}
}
