package provider

import "crypto/sha256"

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
	verifier: func(o Options) (Verifier, error) {
		return &hmacVerifier{
			scheme: "github", header: "X-Hub-Signature-256", prefix: "sha256=",
			size: sha256.Size, lowerHex: true, keys: rawKeys(sha256.New, o.Secrets),
		}, nil
	},
}
