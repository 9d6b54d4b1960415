package provider

import (
	"errors"
	"fmt"
)

// telegramProvider: a bot's webhook set with setWebhook's secret_token
// receives it in X-Telegram-Bot-Api-Secret-Token (core.telegram.org/bots/
// api#setwebhook), the token scheme under a fixed header; the body is not
// signed. Telegram resends an update until it is answered, under the same
// update_id. An Update has no type field (its kind is which field it
// carries: message, callback_query, …), so there is no default type.
//
// update_id rises one by one, but after a week without updates Telegram
// picks the next one at random: a bot that sleeps for weeks at a time may,
// rarely, see an update id again within [retention] dedupe.
var telegramProvider = Provider{
	Name:      "telegram",
	Signature: "`X-Telegram-Bot-Api-Secret-Token` equals setWebhook's `secret_token`",
	Docs:      "https://core.telegram.org/bots/api#setwebhook",
	EventID:   "json:update_id",
	Redact:    []string{"X-Telegram-Bot-Api-Secret-Token"},
	// setWebhook: an unsuccessful request is given up "after a reasonable
	// amount of attempts".
	TimeoutNote: "not published",
	Retries:     genericRetries,
	Samples: []Sample{
		{File: "telegram/message.json", ID: "123456789", Resource: "1111111", Key: "json:message.chat.id", Version: "json:message.date"},
	},
	signer: telegramSigner,
	verifier: func(o Options) (Verifier, error) {
		for i, s := range o.Secrets {
			if err := telegramSecret(s); err != nil {
				return nil, fmt.Errorf("signature: telegram: secret %d: %w", i+1, err)
			}
		}
		return newTokenVerifier("telegram", "X-Telegram-Bot-Api-Secret-Token", o.Secrets), nil
	},
	secret: telegramSecret,
}

// telegramSecret checks a secret_token as setWebhook does: 1 to 256
// characters, each A-Z, a-z, 0-9, _ or -. Telegram refuses any other, so a
// source holding one could never verify a request.
func telegramSecret(s string) error {
	if len(s) == 0 || len(s) > 256 {
		return errors.New("want 1 to 256 characters, as Telegram's secret_token")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-' {
			continue
		}
		return errors.New("want only A-Z, a-z, 0-9, _ and -, as Telegram's secret_token")
	}
	return nil
}

// telegramSigner sends the secret_token, which must be one setWebhook
// takes.
func telegramSigner(o Options) (*Signer, error) {
	if err := telegramSecret(o.Secrets[0]); err != nil {
		return nil, err
	}
	return tokenSigner("X-Telegram-Bot-Api-Secret-Token")(o)
}
