package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

const paddleHeader = "Paddle-Signature"

// paddleProvider is Paddle Billing (developer.paddle.com/webhooks/
// signature-verification): the event id and type are the JSON body's own
// event_id and event_type. notification_id is not the id: Paddle sends one
// event to each notification destination under a new notification id, and
// the event is what a target must see once.
var paddleProvider = Provider{
	Name:      "paddle",
	Signature: "`Paddle-Signature` `ts=;h1=` (hex of `ts:body`, every `h1` tried), `ts` at most 5 s old",
	Docs:      "https://developer.paddle.com/webhooks/signature-verification",
	EventID:   "json:event_id",
	EventType: "json:event_type",
	// Paddle's SDKs (paddle-node-sdk WebhooksValidator, paddle-python-sdk
	// Verifier) accept a ts at most 5 seconds old, and Paddle's docs ask
	// manual checks to do the same.
	Tolerance: 5 * time.Second,
	Redact:    []string{paddleHeader},
	verifier: func(o Options) (Verifier, error) {
		// The HMAC key is the whole pdl_ntfset_... secret key, as Paddle
		// shows it.
		return &paddleVerifier{keys: rawKeys(sha256.New, o.Secrets), tol: o.Tolerance}, nil
	},
}

// paddleVerifier checks Paddle-Signature: ts=<unix>;h1=<hex>[;h1=<hex>]:
// h1 is the lower-case hex of HMAC-SHA256 over "<ts>:<body>". Every h1 is
// tried ("signatures contain at least one h1", as paddle-python-sdk reads
// them), and keys other than ts and h1 are skipped, as paddle-node-sdk
// does, so a future scheme cannot stand in for h1.
//
// Only a ts older than the tolerance is refused: the SDKs check that
// direction alone (paddle-go-sdk checks no time at all). Hex digits are
// lower case only, since the Node and Python SDKs compare the hex strings.
type paddleVerifier struct {
	keys []*macKey
	tol  time.Duration
}

func (v *paddleVerifier) Verify(h http.Header, body []byte, now time.Time) error {
	val := h.Get(paddleHeader)
	if val == "" {
		return fmt.Errorf("paddle: %s: %w", paddleHeader, ErrMissing)
	}
	ts, h1, good, err := parsePaddle(val)
	if err != nil {
		return fmt.Errorf("paddle: %s: %s: %w", paddleHeader, err, ErrMalformed)
	}
	switch {
	case h1 == 0:
		return fmt.Errorf("paddle: %s: no h1 signature: %w", paddleHeader, ErrMalformed)
	case good == 0:
		return fmt.Errorf("paddle: %s: no h1 signature is 64 lower-case hex digits: %w", paddleHeader, ErrMalformed)
	}
	t, _ := parseUnix(ts) // parsePaddle checked it
	if !fresh(t, now, v.tol, false) {
		return fmt.Errorf("paddle: %s: %w", paddleHeader, ErrTimestamp)
	}
	var mac [maxMAC]byte
	for _, k := range v.keys {
		if paddleAnyH1(val, k.sum(mac[:], body, ts, ":")) {
			return nil
		}
	}
	return fmt.Errorf("paddle: %s: %w", paddleHeader, ErrMismatch)
}

// parsePaddle reads a Paddle-Signature value: its one ts, which must be a
// decimal Unix time, how many h1 entries it has and how many of those are
// well formed. The error text names what is wrong, never a value.
func parsePaddle(val string) (ts string, h1, good int, err error) {
	haveTS := false
	for rest := val; rest != ""; {
		var item string
		item, rest, _ = strings.Cut(rest, ";")
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, value, ok := strings.Cut(item, "=")
		if !ok {
			return "", 0, 0, errors.New("entry without '='")
		}
		switch key {
		case "ts":
			if haveTS {
				return "", 0, 0, errors.New("more than one ts=")
			}
			ts, haveTS = value, true
		case "h1":
			h1++
			var sig [sha256.Size]byte
			if decodeHex(sig[:], value, true) {
				good++
			}
		}
	}
	if !haveTS {
		return "", 0, 0, errors.New("no ts= timestamp")
	}
	if _, ok := parseUnix(ts); !ok {
		return "", 0, 0, errors.New("ts is not a decimal Unix time")
	}
	return ts, h1, good, nil
}

// paddleAnyH1 reports whether any well-formed h1 entry of a header that
// already parsed equals mac.
func paddleAnyH1(val string, mac []byte) bool {
	for rest := val; rest != ""; {
		var item string
		item, rest, _ = strings.Cut(rest, ";")
		value, ok := strings.CutPrefix(strings.TrimSpace(item), "h1=")
		if !ok {
			continue
		}
		var sig [sha256.Size]byte
		if decodeHex(sig[:], value, true) && hmac.Equal(sig[:], mac) {
			return true
		}
	}
	return false
}
