package oduflowenv

import (
	"crypto/sha256"
	"encoding/hex"
)

// scopeLabel separates the derivation of a scoped request id from every other use of SHA-256.
const scopeLabel = "oduflow-request-scope-v1"

// ScopedRequestID is the id under which a caller's request id on one client is stored: a UUID (version
// 8, canonical lowercase) derived from the client and the caller's id. A request id is scoped by its
// client: the same id on two clients is two requests, so that a caller cannot learn or take another
// client's (another company's) request through its own, and at-most-once holds per (client, request).
func ScopedRequestID(minion, request string) string {
	h := sha256.Sum256([]byte(scopeLabel + "\x00" + minion + "\x00" + request))
	b := h[:16]
	b[6] = b[6]&0x0f | 0x80 // version 8: a custom (derived) UUID
	b[8] = b[8]&0x3f | 0x80 // the RFC 9562 variant
	x := hex.EncodeToString(b)
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}
