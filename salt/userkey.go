package salt

import (
	"context"
	"encoding/base64"
)

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

type userKeyAuth struct {
	user, path string
	cache      *keyCache // nil: read the file every time
}

// UserKey authenticates with the master's per-user key file
// (<cachedir>/.<user>_key, e.g. /var/cache/salt/master/.root_key). The file is
// checked again for every request, because the master writes a new key at every
// start: the key read last is reused only while the file is provably the same
// file (an lstat finds the same inode, mode, size and times), else the file is
// read again. The file must be a regular file (no symlink) without group-write or
// any "other" permission bits. user is sent as the "user" field; "root" (or
// the master's user) gets full access.
func UserKey(user, keyFile string) Auth {
	return userKeyAuth{user: user, path: keyFile, cache: &keyCache{}}
}

func (a userKeyAuth) material(context.Context) (authMaterial, error) {
	key, err := a.cache.read(a.path)
	if err != nil {
		return authMaterial{}, err
	}
	return authMaterial{kind: authKey, user: a.user, key: key}, nil
}

// CheckUserKey reads the user key file the way UserKey does before a request (a regular file, no
// symlink, no group-write or other bits, exactly a Salt user key) and reports what is wrong with it
// (ErrKeyFile), so that a service can refuse a bad file before it starts serving instead of on its
// first request. Nothing is sent; the key is not kept.
func CheckUserKey(keyFile string) error {
	_, err := readKeyFile(keyFile)
	return err
}
