// Package proof is the receipt proof of protocol 1: oduflow_job.attest signs the receipt with the
// minion's own Salt key over a nonce the dispatcher chose (and so does oduflow_job.run, in the same
// form, over the nonce its publication carried, for a module that advertises it), and the dispatcher
// verifies it here. The receipt package documents the protocol. It sits one floor above receipt (it
// imports receipt, the dispatcher and the test minions import it), which is why it is not under
// internal/: a helper there imports no public package. Callers are the dispatcher (Verify) and
// simulated minions (Sign).
package proof

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/receipt"
)

// Receipt proofs: oduflow_job.attest(request_id, jid, profile, nonce) answers the same nine-key
// receipt status gives, signed by the minion's own Salt key pair over a nonce the master chose.
// The receipt itself (protocol 1) is unchanged; the proof travels next to it.

// Alg is the only proof algorithm: RSA PKCS#1 v1.5 signature over SHA-256 (Salt keys are RSA).
const Alg = "rsa-pkcs1v15-sha256"

// Prefix separates proof messages from anything else the minion key signs (Salt's own
// SHA-1 signatures, other protocols): a proof is valid only as a proof.
const Prefix = "oduflow-receipt-proof-v1\n"

// Nonce bounds: lowercase hex, 32 to 64 digits (16 to 32 random bytes).
const (
	MinNonceLen = 32
	MaxNonceLen = 64
)

// MinKeyBits is the smallest RSA modulus accepted for a proof (Salt's default keysize is 2048).
const MinKeyBits = 2048

// maxSigBytes bounds the decoded signature (a 16384-bit key), so hostile input cannot cost much.
const maxSigBytes = 2048

// ErrInvalid: a proof that does not verify. The *Error carries the reason.
var ErrInvalid = errors.New("receipt: proof invalid")

// ErrInvalidNonce: a nonce that is not 32 to 64 lowercase hex digits.
var ErrInvalidNonce = errors.New("receipt: invalid proof nonce")

// Proof reasons (Error.Reason), short machine words.
const (
	ReasonMalformed = "malformed" // not {receipt, alg, sig} with a strict nine-key receipt and base64 sig
	ReasonAlg       = "alg"       // an algorithm other than Alg
	ReasonKey       = "key"       // no key, or an RSA key shorter than MinKeyBits
	ReasonSignature = "signature" // the signature does not verify (wrong key, other nonce, changed receipt)
)

// Error explains why a proof was refused. Values from the proof are never included.
type Error struct {
	Reason string
}

func (e *Error) Error() string { return fmt.Sprintf("receipt: proof invalid (%s)", e.Reason) }

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *Error) Unwrap() error { return ErrInvalid }

func proofInvalid(reason string) error { return &Error{Reason: reason} }

// Proof is the answer of oduflow_job.attest: the receipt (or status answer), the algorithm and the
// raw signature bytes.
type Proof struct {
	Receipt receipt.Receipt
	Alg     string
	Sig     []byte
}

// ValidateNonce checks that s is 32 to 64 lowercase hex digits.
func ValidateNonce(s string) error {
	if len(s) < MinNonceLen || len(s) > MaxNonceLen {
		return ErrInvalidNonce
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return ErrInvalidNonce
		}
	}
	return nil
}

// NewNonce returns 32 random bytes as 64 lowercase hex digits.
func NewNonce() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program instead)
	return hex.EncodeToString(b[:])
}

// Message is the signed message: Prefix, the nonce, "\n", the receipt's canonical JSON.
// The Python module builds the same bytes.
func Message(nonce string, r receipt.Receipt) ([]byte, error) {
	if err := ValidateNonce(nonce); err != nil {
		return nil, err
	}
	body, err := r.Encode()
	if err != nil {
		return nil, err
	}
	msg := make([]byte, 0, len(Prefix)+len(nonce)+1+len(body))
	msg = append(msg, Prefix...)
	msg = append(msg, nonce...)
	msg = append(msg, '\n')
	return append(msg, body...), nil
}

// FromValue reads an attest answer as decoded from a Salt return: a map with exactly the keys
// receipt (a strict protocol-1 receipt, see FromValue), alg (string) and sig (standard base64).
// Every defect is a *Error with reason malformed.
func FromValue(v any) (Proof, error) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 3 {
		return Proof{}, proofInvalid(ReasonMalformed)
	}
	alg, ok1 := m["alg"].(string)
	sig64, ok2 := m["sig"].(string)
	rv, ok3 := m["receipt"]
	if !ok1 || !ok2 || !ok3 || len(sig64) > base64.StdEncoding.EncodedLen(maxSigBytes) {
		return Proof{}, proofInvalid(ReasonMalformed)
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(sig64)
	if err != nil || len(sig) == 0 {
		return Proof{}, proofInvalid(ReasonMalformed)
	}
	r, err := receipt.FromValue(rv)
	if err != nil {
		return Proof{}, proofInvalid(ReasonMalformed)
	}
	return Proof{Receipt: r, Alg: alg, Sig: sig}, nil
}

// Verify checks p against the minion's accepted public key and the nonce the master sent, and
// returns the proven receipt. It does not check the binding to a claim: callers must (Binding.Check).
// Errors: ErrInvalidNonce for a bad nonce; otherwise a *Error (errors.Is ErrInvalid) with
// reason alg, key, malformed (a receipt that does not validate) or signature.
func Verify(pub *rsa.PublicKey, nonce string, p Proof) (receipt.Receipt, error) {
	if err := ValidateNonce(nonce); err != nil {
		return receipt.Receipt{}, err
	}
	if p.Alg != Alg {
		return receipt.Receipt{}, proofInvalid(ReasonAlg)
	}
	if pub == nil || pub.N == nil || pub.N.BitLen() < MinKeyBits {
		return receipt.Receipt{}, proofInvalid(ReasonKey)
	}
	msg, err := Message(nonce, p.Receipt)
	if err != nil {
		return receipt.Receipt{}, proofInvalid(ReasonMalformed)
	}
	sum := sha256.Sum256(msg)
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], p.Sig); err != nil {
		return receipt.Receipt{}, proofInvalid(ReasonSignature)
	}
	return p.Receipt, nil
}

// Sign signs r over nonce the way oduflow_job.attest does. The Go model minions of the tests
// use it; the dispatcher never signs.
func Sign(key *rsa.PrivateKey, nonce string, r receipt.Receipt) (map[string]any, error) {
	msg, err := Message(nonce, r)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(msg)
	sig, err := rsa.SignPKCS1v15(nil, key, crypto.SHA256, sum[:])
	if err != nil {
		return nil, errors.Wrap(err, "receipt: sign proof")
	}
	return map[string]any{"receipt": r.Map(), "alg": Alg, "sig": base64.StdEncoding.EncodeToString(sig)}, nil
}
