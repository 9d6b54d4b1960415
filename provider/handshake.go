package provider

import (
	"encoding/json"

	"hookbox/location"
)

// Reply is a handshake's answer, sent with status 200.
type Reply struct {
	ContentType string
	Body        []byte
}

// JSONReply is a reply holding v encoded as JSON.
func JSONReply(v any) Reply {
	b, err := json.Marshal(v)
	if err != nil {
		// The handshakes reply with maps of strings: a failure is a
		// programmer's error.
		panic("provider: handshake reply: " + err.Error())
	}
	return Reply{ContentType: "application/json", Body: append(b, '\n')}
}

// Handshaker answers a verified request that asks the endpoint to prove
// itself instead of carrying an event (Slack's url_verification, Zoom's
// endpoint.url_validation, Twitch's webhook_callback_verification,
// Discord's PING): ok reports whether r is one, and reply is the answer.
// Nothing of such a request is stored. r's body is decoded as JSON at most
// once, and the decoding is shared with the event's locations. A Handshaker
// is safe for concurrent use.
type Handshaker func(r *location.Request) (reply Reply, ok bool)
