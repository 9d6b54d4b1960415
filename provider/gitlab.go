package provider

import "time"

// gitlabProvider: X-Gitlab-Token holds the secret token itself, the token
// scheme under a fixed header; the body is not signed.
var gitlabProvider = Provider{
	Name:      "gitlab",
	Signature: "`X-Gitlab-Token` (compared in constant time)",
	Docs:      "https://docs.gitlab.com/user/project/integrations/webhooks/",
	EventID:   "header:X-Gitlab-Event-UUID",
	EventType: "header:X-Gitlab-Event",
	Redact:    []string{"X-Gitlab-Token"},
	// GitLab.com waits 10 seconds (a self-managed instance its webhook
	// timeout setting), and retries no failed request: a failing webhook is
	// disabled for a while instead.
	Timeout:     10 * time.Second,
	TimeoutNote: "GitLab.com's; a self-managed instance's webhook timeout setting",
	Retries:     Retries{Note: "none: a failed request is not sent again (a failing webhook is disabled for a while)"},
	Samples: []Sample{
		{Type: "Push Hook", File: "gitlab/push.json", ID: "13792a34-cac6-4fda-95a8-c58e00a3954e", Resource: "feature-5d0a", Key: "json:ref", Version: "json:commits.0.timestamp"},
	},
	signer: tokenSigner("X-Gitlab-Token"),
	verifier: func(o Options) (Verifier, error) {
		return newTokenVerifier("gitlab", "X-Gitlab-Token", o.Secrets), nil
	},
}
