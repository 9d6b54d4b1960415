package provider

// gitlabProvider: X-Gitlab-Token holds the secret token itself, the token
// scheme under a fixed header; the body is not signed.
var gitlabProvider = Provider{
	Name:      "gitlab",
	Signature: "`X-Gitlab-Token` (compared in constant time)",
	Docs:      "https://docs.gitlab.com/user/project/integrations/webhooks/",
	EventID:   "header:X-Gitlab-Event-UUID",
	EventType: "header:X-Gitlab-Event",
	Redact:    []string{"X-Gitlab-Token"},
	signer:    tokenSigner("X-Gitlab-Token"),
	verifier: func(o Options) (Verifier, error) {
		return newTokenVerifier("gitlab", "X-Gitlab-Token", o.Secrets), nil
	},
}
