package provider

import (
	"crypto/sha1"
	"crypto/sha256"
	"strings"
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
	// No order key: GitHub's payloads have no field that versions their
	// resource in every event (updated_at changes only with some).
	Refetch: githubRefetch,
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

// githubRefetch reads the API url of the object an event is about (an
// issue's, a pull request's, …), re-rooted on the configured base, with
// the token as a Bearer credential (a personal access token or an app's
// installation token).
var githubRefetch = &Refetch{
	Base:     githubAPI,
	Docs:     "https://docs.github.com/en/webhooks/webhook-events-and-payloads",
	What:     "`GET` the `url` of the event's object (`issue`, `pull_request`, `comment`, `release`, …)",
	Rate:     "5000/h",
	RateNote: "a token's primary REST limit",
	Header: map[string]string{
		"Accept":               "application/vnd.github+json",
		"X-GitHub-Api-Version": "2022-11-28",
	},
	Request: githubRequest,
}

const githubAPI = "https://api.github.com"

// githubObjects maps an event to the member of its payload holding the
// object whose url it fetches: the events whose object the REST API
// serves at that url.
var githubObjects = map[string]string{
	"issues":                      "issue",
	"issue_comment":               "comment",
	"pull_request":                "pull_request",
	"pull_request_review_comment": "comment",
	"commit_comment":              "comment",
	"release":                     "release",
	"milestone":                   "milestone",
	"label":                       "label",
	"check_run":                   "check_run",
	"check_suite":                 "check_suite",
	"deployment":                  "deployment",
	"deployment_status":           "deployment_status",
	"workflow_run":                "workflow_run",
	"workflow_job":                "workflow_job",
	"repository":                  "repository",
}

func githubRequest(e FetchEvent) (FetchRequest, error) {
	object, ok := githubObjects[e.Type]
	if !ok {
		return FetchRequest{}, noResource("github: %q events have no object with an API url", e.Type)
	}
	doc, err := jsonObject(e.Body)
	if err != nil {
		return FetchRequest{}, err
	}
	u := field(doc, object+".url")
	if u == "" {
		return FetchRequest{}, noResource("github: the payload has no %s.url", object)
	}
	// The url names api.github.com, or a GitHub Enterprise Server's API:
	// only its path is kept, below the configured base, so a payload never
	// sends the token anywhere else.
	for _, base := range []string{e.Base, githubAPI} {
		if base != "" && strings.HasPrefix(u, base+"/") {
			p, err := apiPath(u[len(base):])
			if err != nil {
				return FetchRequest{}, err
			}
			return FetchRequest{Path: p}, nil
		}
	}
	return FetchRequest{}, noResource("github: %s.url %q is not below the API base %s", object, u, githubAPI)
}
