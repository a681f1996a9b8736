package receipt

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"

	"github.com/cockroachdb/errors"
)

// Receipt proofs: oduflow_job.attest(request_id, jid, profile, nonce) answers the same nine-key
// receipt status gives, signed by the minion's own Salt key pair over a nonce the master chose.
// The receipt itself (protocol 1) is unchanged; the proof travels next to it.

// ProofAlg is the only proof algorithm: RSA PKCS#1 v1.5 signature over SHA-256 (Salt keys are RSA).
const ProofAlg = "rsa-pkcs1v15-sha256"

// ProofPrefix separates proof messages from anything else the minion key signs (Salt's own
// SHA-1 signatures, other protocols): a proof is valid only as a proof.
const ProofPrefix = "oduflow-receipt-proof-v1\n"

// Nonce bounds: lowercase hex, 32 to 64 digits (16 to 32 random bytes).
const (
	MinNonceLen = 32
	MaxNonceLen = 64
)

// MinProofKeyBits is the smallest RSA modulus accepted for a proof (Salt's default keysize is 2048).
const MinProofKeyBits = 2048

// maxSigBytes bounds the decoded signature (a 16384-bit key), so hostile input cannot cost much.
const maxSigBytes = 2048

// ErrProofInvalid: a proof that does not verify. The *ProofError carries the reason.
var ErrProofInvalid = errors.New("receipt: proof invalid")

// ErrInvalidNonce: a nonce that is not 32 to 64 lowercase hex digits.
var ErrInvalidNonce = errors.New("receipt: invalid proof nonce")

// Proof reasons (ProofError.Reason), short machine words.
const (
	ProofReasonMalformed = "malformed" // not {receipt, alg, sig} with a strict nine-key receipt and base64 sig
	ProofReasonAlg       = "alg"       // an algorithm other than ProofAlg
	ProofReasonKey       = "key"       // no key, or an RSA key shorter than MinProofKeyBits
	ProofReasonSignature = "signature" // the signature does not verify (wrong key, other nonce, changed receipt)
)

// ProofError explains why a proof was refused. Values from the proof are never included.
type ProofError struct {
	Reason string
}

func (e *ProofError) Error() string { return fmt.Sprintf("receipt: proof invalid (%s)", e.Reason) }

// Unwrap makes errors.Is(err, ErrProofInvalid) hold.
func (e *ProofError) Unwrap() error { return ErrProofInvalid }

func proofInvalid(reason string) error { return &ProofError{Reason: reason} }

// Proof is the answer of oduflow_job.attest: the receipt (or status answer), the algorithm and the
// raw signature bytes.
type Proof struct {
	Receipt Receipt
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

// ProofMessage is the signed message: ProofPrefix, the nonce, "\n", the receipt's canonical JSON.
// The Python module builds the same bytes.
func ProofMessage(nonce string, r Receipt) ([]byte, error) {
	if err := ValidateNonce(nonce); err != nil {
		return nil, err
	}
	body, err := r.Encode()
	if err != nil {
		return nil, err
	}
	msg := make([]byte, 0, len(ProofPrefix)+len(nonce)+1+len(body))
	msg = append(msg, ProofPrefix...)
	msg = append(msg, nonce...)
	msg = append(msg, '\n')
	return append(msg, body...), nil
}

// ProofFromValue reads an attest answer as decoded from a Salt return: a map with exactly the keys
// receipt (a strict protocol-1 receipt, see FromValue), alg (string) and sig (standard base64).
// Every defect is a *ProofError with reason malformed.
func ProofFromValue(v any) (Proof, error) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 3 {
		return Proof{}, proofInvalid(ProofReasonMalformed)
	}
	alg, ok1 := m["alg"].(string)
	sig64, ok2 := m["sig"].(string)
	rv, ok3 := m["receipt"]
	if !ok1 || !ok2 || !ok3 || len(sig64) > base64.StdEncoding.EncodedLen(maxSigBytes) {
		return Proof{}, proofInvalid(ProofReasonMalformed)
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(sig64)
	if err != nil || len(sig) == 0 {
		return Proof{}, proofInvalid(ProofReasonMalformed)
	}
	r, err := FromValue(rv)
	if err != nil {
		return Proof{}, proofInvalid(ProofReasonMalformed)
	}
	return Proof{Receipt: r, Alg: alg, Sig: sig}, nil
}

// VerifyProof checks p against the minion's accepted public key and the nonce the master sent, and
// returns the proven receipt. It does not check the binding to a claim: callers must (Binding.Check).
// Errors: ErrInvalidNonce for a bad nonce; otherwise a *ProofError (errors.Is ErrProofInvalid) with
// reason alg, key, malformed (a receipt that does not validate) or signature.
func VerifyProof(pub *rsa.PublicKey, nonce string, p Proof) (Receipt, error) {
	if err := ValidateNonce(nonce); err != nil {
		return Receipt{}, err
	}
	if p.Alg != ProofAlg {
		return Receipt{}, proofInvalid(ProofReasonAlg)
	}
	if pub == nil || pub.N == nil || pub.N.BitLen() < MinProofKeyBits {
		return Receipt{}, proofInvalid(ProofReasonKey)
	}
	msg, err := ProofMessage(nonce, p.Receipt)
	if err != nil {
		return Receipt{}, proofInvalid(ProofReasonMalformed)
	}
	sum := sha256.Sum256(msg)
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], p.Sig); err != nil {
		return Receipt{}, proofInvalid(ProofReasonSignature)
	}
	return p.Receipt, nil
}

// SignProof signs r over nonce the way oduflow_job.attest does. The Go model minions of the tests
// use it; the dispatcher never signs.
func SignProof(key *rsa.PrivateKey, nonce string, r Receipt) (map[string]any, error) {
	msg, err := ProofMessage(nonce, r)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(msg)
	sig, err := rsa.SignPKCS1v15(nil, key, crypto.SHA256, sum[:])
	if err != nil {
		return nil, errors.Wrap(err, "receipt: sign proof")
	}
	return map[string]any{"receipt": r.Map(), "alg": ProofAlg, "sig": base64.StdEncoding.EncodeToString(sig)}, nil
}
