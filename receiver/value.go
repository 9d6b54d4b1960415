package receiver

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxEventIDLen bounds an event id; longer ones are rejected with 400.
const MaxEventIDLen = 256

// validValue reports whether an id or type can be stored and echoed in
// headers.
func validValue(s string) error {
	if len(s) > MaxEventIDLen {
		return fmt.Errorf("is %d bytes long (max %d)", len(s), MaxEventIDLen)
	}
	ascii := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return errors.New("contains control characters")
		} else if c >= 0x80 {
			ascii = false
		}
	}
	if ascii {
		return nil // the usual id: nothing more to look at
	}
	if !utf8.ValidString(s) {
		return errors.New("is not valid UTF-8")
	}
	for _, r := range s {
		// C1 controls drive terminals as C0 ones do; bidirectional
		// overrides make an id read as another in a listing.
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return errors.New("contains control characters")
		}
	}
	return nil
}
