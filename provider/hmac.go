package provider

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"strings"
)

// hmacProvider is the generic scheme: a header the source names holds
// prefix + hex or base64 of HMAC(secret, body). The body carries no id or
// type hookbox could know of: the source says where they are.
var hmacProvider = Provider{
	Name:      "hmac",
	Signature: "`header`, `algorithm` (sha256/sha1/sha512), `encoding` (hex/base64), `prefix`",
	Header:    "signature",
	Settings: []Setting{
		{Key: "algorithm", Choices: []string{"sha256", "sha1", "sha512"}},
		{Key: "encoding", Choices: []string{"hex", "base64"}},
		{Key: "prefix"},
	},
	TimeoutNote: "no provider",
	Retries:     schemeRetries,
	Samples: []Sample{
		{Type: "order.paid", File: "generic/event.json", ID: "evt_7wVnK2cP9xQ4mR1s", Resource: "ord_3Jb8Lp2Hq6Yt", Key: "json:data.object.id", Version: "json:created"},
	},
	signer:   newHMACSigner,
	verifier: newHMAC,
}

func newHMAC(o Options) (Verifier, error) {
	header, err := headerName(o)
	if err != nil {
		return nil, err
	}
	var fn func() hash.Hash
	var size int
	switch strings.ToLower(o.Algorithm) {
	case "", "sha256":
		fn, size = sha256.New, sha256.Size
	case "sha1":
		fn, size = sha1.New, sha1.Size
	case "sha512":
		fn, size = sha512.New, sha512.Size
	default:
		return nil, fmt.Errorf("signature: hmac: unknown algorithm %q (want sha256, sha1 or sha512)", o.Algorithm)
	}
	v := &hmacVerifier{scheme: "hmac", header: header, prefix: o.Prefix, size: size, keys: rawKeys(fn, o.Secrets)}
	switch strings.ToLower(o.Encoding) {
	case "", "hex":
	case "base64":
		v.base64 = true
	default:
		return nil, fmt.Errorf("signature: hmac: unknown encoding %q (want hex or base64)", o.Encoding)
	}
	return v, nil
}

// newHMACSigner signs as the source's settings say: its header, prefix,
// algorithm and encoding (hex in lower case).
func newHMACSigner(o Options) (*Signer, error) {
	header, err := headerName(o)
	if err != nil {
		return nil, err
	}
	var fn func() hash.Hash
	switch strings.ToLower(o.Algorithm) {
	case "", "sha256":
		fn = sha256.New
	case "sha1":
		fn = sha1.New
	case "sha512":
		fn = sha512.New
	default:
		return nil, fmt.Errorf("unknown algorithm %q (want sha256, sha1 or sha512)", o.Algorithm)
	}
	enc := hexMAC
	switch strings.ToLower(o.Encoding) {
	case "", "hex":
	case "base64":
		enc = base64MAC
	default:
		return nil, fmt.Errorf("unknown encoding %q (want hex or base64)", o.Encoding)
	}
	return bodySigner(header, o.Prefix, fn, enc)(o)
}
