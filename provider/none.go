package provider

import (
	"net/http"
	"time"
)

// noneProvider accepts every request unchecked, for a source whose config
// says insecure = true.
var noneProvider = Provider{
	Name:        "none",
	Signature:   "nothing is checked (needs `insecure = true`)",
	Unsigned:    true,
	TimeoutNote: "no provider",
	Retries:     schemeRetries,
	Samples: []Sample{
		{Type: "order.paid", File: "generic/event.json", ID: "evt_7wVnK2cP9xQ4mR1s", Resource: "ord_3Jb8Lp2Hq6Yt", Key: "json:data.object.id", Version: "json:created"},
	},
	verifier: func(Options) (Verifier, error) { return noneVerifier{}, nil },
}

type noneVerifier struct{}

func (noneVerifier) Verify(http.Header, []byte, time.Time) error { return nil }
