package provider

// asaasProvider: the asaas-access-token header holds the authentication
// token set on the webhook in Asaas (docs.asaas.com "Receba eventos do
// Asaas no seu endpoint de Webhook"), the token scheme under a fixed
// header; the body is not signed. Asaas delivers at least once and keeps
// the event's id (evt_…) across its retries; "event" ("PAYMENT_RECEIVED")
// is the type.
var asaasProvider = Provider{
	Name:        "asaas",
	Signature:   "`asaas-access-token` equals the webhook's token (compared in constant time)",
	Docs:        "https://docs.asaas.com/docs/receba-eventos-do-asaas-no-seu-endpoint-de-webhook",
	EventID:     "json:id",
	EventType:   "json:event",
	Redact:      []string{"Asaas-Access-Token"},
	TimeoutNote: "not published",
	Retries:     genericRetries,
	Samples: []Sample{
		{Type: "PAYMENT_RECEIVED", File: "asaas/PAYMENT_RECEIVED.json", ID: "evt_05b708f961d739ea7eba7e4db318f621", Resource: "pay_080225913252", Key: "json:payment.id", Version: "json:dateCreated"},
	},
	signer: tokenSigner("Asaas-Access-Token"),
	verifier: func(o Options) (Verifier, error) {
		return newTokenVerifier("asaas", "Asaas-Access-Token", o.Secrets), nil
	},
}
