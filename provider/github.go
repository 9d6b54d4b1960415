package provider

import (
	"crypto/sha1"
	"crypto/sha256"
	"time"
)

// githubProvider: X-Hub-Signature-256 is "sha256=" + lower-case hex of
// HMAC-SHA256(secret, body). GitHub signs neither its delivery id nor a
// timestamp. It also sends the SHA-1 X-Hub-Signature, never checked and
// never stored.
var githubProvider = Provider{
	Name:      "github",
	Signature: "`X-Hub-Signature-256` (`sha256=` hex)",
	Docs:      "https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries",
	EventID:   "header:X-GitHub-Delivery",
	EventType: "header:X-GitHub-Event",
	Redact:    []string{"X-Hub-Signature-256", "X-Hub-Signature"},
	// "takes longer than 10 seconds to respond" is a failed delivery, and
	// GitHub "does not automatically redeliver failed deliveries" (Handling
	// failed webhook deliveries).
	Timeout: 10 * time.Second,
	Retries: Retries{Note: "none: GitHub does not redeliver a failed delivery by itself"},
	Samples: []Sample{
		{Type: "push", File: "github/push.json", ID: "72d3162e-cc78-11e3-81ab-4c9367dc0958", Resource: "feature-7c1e", Key: "json:ref", Version: "json:repository.pushed_at"},
		{Type: "pull_request", File: "github/pull_request.json", ID: "9a4b6f52-3e10-11f0-8c1a-0242ac120002", Resource: "1885474921", Key: "json:pull_request.id", Version: "json:pull_request.updated_at"},
	},
	signer: githubSigner,
	verifier: func(o Options) (Verifier, error) {
		return &hmacVerifier{
			scheme: "github", header: "X-Hub-Signature-256", prefix: "sha256=",
			size: sha256.Size, lowerHex: true, keys: rawKeys(sha256.New, o.Secrets),
		}, nil
	},
}

// githubSigner sends both signatures GitHub sends: X-Hub-Signature-256,
// the one checked, and the SHA-1 X-Hub-Signature kept for older
// receivers.
func githubSigner(o Options) (*Signer, error) {
	key := []byte(o.Secrets[0])
	return signs(func(r *Request, _ time.Time) error {
		r.Header.Set("X-Hub-Signature-256", "sha256="+hexMAC(hmacOf(sha256.New, key, r.Body)))
		r.Header.Set("X-Hub-Signature", "sha1="+hexMAC(hmacOf(sha1.New, key, r.Body)))
		return nil
	})
}
