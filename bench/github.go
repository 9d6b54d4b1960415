package bench

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
)

// GitHubRequest is a webhook as GitHub sends it: one JSON body, signed once
// with HMAC-SHA256 in X-Hub-Signature-256, and a fresh X-GitHub-Delivery id
// on every request so that each one is a new event for the receiver.
type GitHubRequest struct {
	Body   []byte
	Header http.Header // everything but the delivery id
}

// IDHeader is where GitHub puts the delivery id.
const IDHeader = "X-GitHub-Delivery"

// NewGitHubRequest returns a push-event body of about size bytes signed with
// secret.
func NewGitHubRequest(secret string, size int) GitHubRequest {
	body := PushBody(size)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitHub-Hookshot/bench")
	h.Set("X-GitHub-Event", "push")
	h.Set("X-GitHub-Hook-ID", "123456789")
	h.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	return GitHubRequest{Body: body, Header: h}
}

// PushBody returns a JSON object shaped like a GitHub push payload, padded
// to exactly size bytes when size is larger than the skeleton.
func PushBody(size int) []byte {
	const head = `{"ref":"refs/heads/main","before":"6113728f27ae82c7b1a177c8d03f9e96e0adf246",` +
		`"after":"76ae82c7b1a177c8d03f9e96e0adf2466113728f","repository":{"id":1296269,` +
		`"full_name":"octocat/Hello-World","private":false},"pusher":{"name":"octocat",` +
		`"email":"octocat@github.com"},"head_commit":{"id":"76ae82c7b1a177c8d03f9e96e0adf2466113728f",` +
		`"message":"`
	const tail = `"}}`
	pad := size - len(head) - len(tail)
	if pad < 0 {
		pad = 0
	}
	var b strings.Builder
	b.WriteString(head)
	words := []string{"Update", "README", "fix", "the", "build", "and", "add", "tests", "for", "hooks"}
	for i := 0; b.Len() < len(head)+pad; i++ {
		w := words[i%len(words)]
		if rest := len(head) + pad - b.Len(); rest <= len(w) {
			b.WriteString(strings.Repeat(".", rest))
			break
		}
		b.WriteString(w)
		b.WriteByte(' ')
	}
	b.WriteString(tail)
	return []byte(b.String())
}
