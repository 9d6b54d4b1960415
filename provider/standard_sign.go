package provider

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// StandardSigner signs messages the way a Standard Webhooks sender does:
// what hookbox puts on a delivery to a target with sign_secret_env, so the
// service behind it verifies hookbox with any Standard Webhooks library.
type StandardSigner struct {
	keys [][]byte
}

// NewStandardSigner signs with each of secrets (whsec_ and base64): more
// than one during a rotation. The error names the secret by its position,
// never its value.
func NewStandardSigner(secrets []string) (*StandardSigner, error) {
	s := &StandardSigner{keys: make([][]byte, len(secrets))}
	for i, v := range secrets {
		k, err := decodeWhsec(v)
		if err != nil {
			return nil, fmt.Errorf("signing secret %d: %w", i+1, err)
		}
		s.keys[i] = k
	}
	return s, nil
}

// Sign returns the webhook-timestamp and webhook-signature values for the
// message id sent at ts with body: HMAC-SHA256 over "id.timestamp.body",
// one "v1,<base64>" entry a secret, separated by spaces, as the
// specification says for several keys.
func (s *StandardSigner) Sign(id string, ts time.Time, body []byte) (timestamp, signature string) {
	timestamp = strconv.FormatInt(ts.Unix(), 10)
	var b strings.Builder
	for i, k := range s.keys {
		m := hmac.New(sha256.New, k)
		m.Write([]byte(id))
		m.Write([]byte{'.'})
		m.Write([]byte(timestamp))
		m.Write([]byte{'.'})
		m.Write(body)
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("v1,")
		b.WriteString(base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	return timestamp, b.String()
}
