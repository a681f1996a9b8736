package salt

import "encoding/base64"

// userKeyChars is the length of a Salt user key: salt.crypt.Crypticle.generate_key_string
// base64-encodes 56 random bytes (32 AES + 24 HMAC key bytes) into 76 characters.
const (
	userKeyChars = 76
	userKeyBytes = 56
)

// parseUserKey accepts exactly a Salt user key file: the 76 standard-base64 characters of 56
// bytes, followed by at most one newline (the master writes none; an editor may add one).
// Anything else is refused, so that pointing UserKey at the wrong file (a password file, a
// private key) never sends its content to the master.
func parseUserKey(b []byte) (string, bool) {
	if len(b) == userKeyChars+1 && b[userKeyChars] == '\n' {
		b = b[:userKeyChars]
	}
	if len(b) != userKeyChars {
		return "", false
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(string(b))
	if err != nil || len(raw) != userKeyBytes {
		return "", false
	}
	return string(b), true
}
