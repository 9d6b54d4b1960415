package provider

import "crypto/sha1"

// intercomProvider is Intercom's webhook notifications
// (developers.intercom.com/docs/webhooks, "Signed notifications").
//
// X-Hub-Signature is "sha1=" and the lower-case hex of HMAC-SHA1 over the
// raw JSON body, keyed with the app's client_secret (the Basic Info page
// of the app in the Developer Hub). No timestamp is signed. Every listed
// secret is tried, for a rotation.
//
// A notification's "id" (notif_…) names the notification and stays the
// same when Intercom sends it again, while delivery_attempts, in the same
// body, counts the attempts: the bytes may differ between attempts, so
// body-sha256 would not dedupe them and json:id does. Its "topic" (conversation.user.created,
// contact.user.created, ping, …) is the type.
var intercomProvider = Provider{
	Name:        "intercom",
	Signature:   "`X-Hub-Signature` (`sha1=` hex, the app's `client_secret`; no timestamp)",
	Docs:        "https://developers.intercom.com/docs/webhooks",
	EventID:     "json:id",
	EventType:   "json:topic",
	Redact:      []string{"X-Hub-Signature"},
	TimeoutNote: "not published",
	Retries:     genericRetries,
	Samples: []Sample{
		{Type: "contact.user.created", File: "intercom/contact.user.created.json", ID: "notif_ccd8a4d0-f965-11e3-a367-c779cae3e1b3", Resource: "6762f0dd1bb69f9f2193bb7e", Key: "json:data.item.id", Version: "json:data.item.updated_at"},
	},
	signer: bodySigner("X-Hub-Signature", "sha1=", sha1.New, hexMAC),
	verifier: func(o Options) (Verifier, error) {
		return &hmacVerifier{
			scheme: "intercom", header: "X-Hub-Signature", prefix: "sha1=",
			size: sha1.Size, lowerHex: true, keys: rawKeys(sha1.New, o.Secrets),
		}, nil
	},
}
