package provider

import "crypto/sha256"

// typeformProvider: Typeform-Signature is "sha256=" + the base64 of
// HMAC-SHA256(secret, body) (typeform.com/developers/webhooks/secure-your-webhooks).
// No timestamp is signed. The body's event_id stays the same when Typeform
// retries a delivery, and event_type ("form_response") is the type.
var typeformProvider = Provider{
	Name:        "typeform",
	Signature:   "`Typeform-Signature` (`sha256=` base64), no timestamp",
	Docs:        "https://www.typeform.com/developers/webhooks/secure-your-webhooks/",
	EventID:     "json:event_id",
	EventType:   "json:event_type",
	Redact:      []string{"Typeform-Signature"},
	TimeoutNote: "not published",
	Retries:     genericRetries,
	Samples: []Sample{
		{Type: "form_response", File: "typeform/form_response.json", ID: "01HQ8ZB6T8G0ZJ3W3Q8WNK4F1S", Resource: "a3a12ec67a1365927098a606107fac15", Key: "json:form_response.token", Version: "json:form_response.submitted_at"},
	},
	signer: bodySigner("Typeform-Signature", "sha256=", sha256.New, base64MAC),
	verifier: func(o Options) (Verifier, error) {
		return &hmacVerifier{
			scheme: "typeform", header: "Typeform-Signature", prefix: "sha256=",
			size: sha256.Size, base64: true, keys: rawKeys(sha256.New, o.Secrets),
		}, nil
	},
}
