package service

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"
)

// tokenEntry is one line of the token file: a principal and the SHA-256 of its token.
type tokenEntry struct {
	principal Principal
	hash      [sha256.Size]byte
}

// tokenSet is the bearer tokens of ODUFLOW_AUTH_TOKENS. Only hashes are held.
type tokenSet struct{ entries []tokenEntry }

// loadTokens reads a token file: lines NAME ROLE COMPANY[,COMPANY...] SHA256HEX (the lowercase or
// uppercase hex SHA-256 of the token), # comments and blank lines. The file must be 0600 or stricter.
// Messages name the line, never its hash.
func loadTokens(ctx context.Context, env, path string) (*tokenSet, error) {
	b, err := readPrivateFile(ctx, env, path, true)
	if err != nil {
		return nil, err
	}
	return parseTokens(env, b)
}

func parseTokens(env string, b []byte) (*tokenSet, error) {
	ts := &tokenSet{}
	names := map[string]bool{}
	hashes := map[[sha256.Size]byte]bool{}
	for _, l := range lines(b) {
		if len(l.fields) != 4 {
			return nil, lineError(env, l.n, fmt.Sprintf("%d fields: want NAME ROLE COMPANY[,COMPANY...] SHA256HEX", len(l.fields)))
		}
		p, err := parsePrincipal(env, l)
		if err != nil {
			return nil, err
		}
		raw, err := hex.DecodeString(l.fields[3])
		if err != nil || len(raw) != sha256.Size {
			return nil, lineError(env, l.n, "SHA256HEX: want 64 hex digits (printf %s \"$TOKEN\" | sha256sum)")
		}
		var e tokenEntry
		e.principal = p
		copy(e.hash[:], raw)
		if names[p.Name] {
			return nil, lineError(env, l.n, "NAME already on an earlier line")
		}
		if hashes[e.hash] {
			return nil, lineError(env, l.n, "the token of an earlier line again")
		}
		names[p.Name], hashes[e.hash] = true, true
		ts.entries = append(ts.entries, e)
	}
	if len(ts.entries) == 0 {
		return nil, usageError(env + ": no token")
	}
	return ts, nil
}

// authenticate hashes the presented token and compares it, in constant time, with every entry (no
// early exit: the time does not depend on which entry matched, nor on whether one did).
func (ts *tokenSet) authenticate(token string) (Principal, bool) {
	if ts == nil || token == "" {
		return Principal{}, false
	}
	sum := sha256.Sum256([]byte(token))
	match := -1
	for i := range ts.entries {
		eq := subtle.ConstantTimeCompare(sum[:], ts.entries[i].hash[:])
		match = subtle.ConstantTimeSelect(eq, i, match)
	}
	if match < 0 {
		return Principal{}, false
	}
	return ts.entries[match].principal, true
}

// bearerToken is the token of an "Authorization: Bearer TOKEN" header ("" when none).
func bearerToken(h string) string {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}
