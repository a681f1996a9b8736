package oduflow

import (
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
	receiptproof "github.com/oduflow/oduflow-go/receipt/proof"
	"github.com/oduflow/oduflow-go/salt"
)

// Receipt proofs. Anyone who can fire an event on the master bus (any authenticated minion, through
// _minion_event) can put salt/job/<jid>/ret/<minion> there with any data, and every minion sees every
// publication, so request ids, JIDs and nonces are known to all of them. A return or a status answer is
// therefore only a hint. A final result is committed only from the minion's answer signed with its own
// Salt key over a fresh nonce the dispatcher chose, verified against the key the master accepted for
// that id (pinned in the claim at preflight) and bound to the claim: oduflow_job.attest's answer, or,
// for a module that advertises it ("proof": {"run_return": true}), the return of oduflow_job.run
// itself, signed over the proof_nonce its publication carried (awaitLoop.readReturn), which saves the
// attest job. Either nonce is public once published; what makes a proof evidence is the signature by
// the minion's key over the value this dispatcher chose for this publication or call: a proof signed
// for another nonce (a replay) or by another key does not verify, and the worker then asks attest
// with a fresh nonce exactly as before (TestRunReturnProof).

// funAttest is the read-only function that answers a signed status.
const funAttest = "oduflow_job.attest"

// prove asks c's minion for its signed answer with a fresh nonce and returns the verified answer bound
// to c, or nil (no answer within the call timeout, the key unavailable or changed). Answers on the bus
// that do not verify are counted and skipped: the call keeps waiting for the real one.
func (d *Dispatcher) prove(ctx context.Context, c *claims.Claim, deadline time.Time) *receipt.Receipt {
	t0 := time.Now()
	defer func() { d.hooks.observe(ctx, "proof", time.Since(t0)) }()
	timeout := d.timers.CallTimeout
	if rem := time.Until(deadline); rem < timeout {
		timeout = rem
	}
	if timeout <= 0 {
		return nil
	}
	pub, err := d.minionKey(ctx, c)
	if err != nil {
		d.claimLog(c).Warn("receipt proof not verifiable: accepted minion key", slog.String("error", err.Error()))
		return nil
	}
	nonce := receiptproof.NewNonce()
	var proven receipt.Receipt
	accept := func(jr *salt.JobReturn) bool {
		p, err := receiptproof.FromValue(jr.Return)
		if err == nil {
			proven, err = verifyBound(pub, nonce, c, p)
		}
		if err != nil {
			d.noteUnverified(ctx, c, unverifiedProof)
			return false
		}
		return true
	}
	args := append(statusArgs(c), nonce)
	if _, err := d.callAccept(ctx, c.MinionID, funAttest, args, timeout, accept); err != nil {
		d.claimLog(c).Info("receipt proof without answer", slog.String("error", err.Error()))
		return nil
	}
	return &proven
}

// verifyBound verifies p against pub and nonce and checks that the proven receipt binds to c.
func verifyBound(pub *rsa.PublicKey, nonce string, c *claims.Claim, p receiptproof.Proof) (receipt.Receipt, error) {
	r, err := receiptproof.Verify(pub, nonce, p)
	if err == nil {
		err = c.Binding().Check(r)
	}
	return r, err
}

// verifyFor verifies a proof that came in the return of c's run publication, signed over that
// publication's nonce: the proven receipt bound to c, or false (the accepted key unavailable or changed
// since preflight, a bad signature, another nonce, another binding).
func (d *Dispatcher) verifyFor(ctx context.Context, c *claims.Claim, nonce string, p receiptproof.Proof) (*receipt.Receipt, bool) {
	pub, err := d.minionKey(ctx, c)
	if err != nil {
		return nil, false
	}
	r, err := verifyBound(pub, nonce, c, p)
	if err != nil {
		return nil, false
	}
	return &r, true
}

// defaultPKIDir is the Salt master's default pki_dir.
const defaultPKIDir = "/etc/salt/pki/master"

// maxMinionKeyBytes bounds an accepted minion key file (a 4096-bit PEM key is about 800 bytes).
const maxMinionKeyBytes = 16 << 10

// errMinionKey: the key the master accepted for a minion id cannot be read safely or is not an RSA
// public key; receipt proofs from that minion cannot be verified.
var errMinionKey = errors.New("oduflow: accepted minion key unavailable")

// errMinionKeyChanged: the accepted key's fingerprint differs from the one pinned in the claim at
// preflight (the minion was re-keyed, or the pki directory changed); nothing it signs is evidence.
var errMinionKeyChanged = errors.New("oduflow: accepted minion key changed since preflight")

// minionKey is a minion's accepted Salt public key and its fingerprint.
type minionKey struct {
	Public *rsa.PublicKey
	// SHA256 is the lowercase hex SHA-256 of the key's DER SubjectPublicKeyInfo.
	SHA256 string
}

// loadMinionKey reads <pkiDir>/minions/<minion>: opened with O_NOFOLLOW|O_NONBLOCK (a symlink or a
// FIFO planted there is refused, never followed or waited on), a regular file of at most 16 KiB,
// holding one PEM "PUBLIC KEY" (SubjectPublicKeyInfo) or "RSA PUBLIC KEY" (PKCS#1) block of an RSA
// key of at least 2048 bits: the two forms Salt writes. ctx is checked before the read (a local
// file read is not otherwise interruptible).
func loadMinionKey(ctx context.Context, pkiDir, minion string) (minionKey, error) {
	if err := receipt.ValidateMinionID(minion); err != nil {
		return minionKey{}, invalid(err, "minion id")
	}
	if err := ctx.Err(); err != nil {
		return minionKey{}, err
	}
	if pkiDir == "" || !filepath.IsAbs(pkiDir) {
		return minionKey{}, errors.Wrap(errMinionKey, "pki dir must be an absolute path")
	}
	path := filepath.Join(pkiDir, "minions", minion)
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return minionKey{}, errors.Wrap(errMinionKey, "no accepted key for the minion")
		}
		return minionKey{}, errmark.Mark(errors.Wrap(err, "oduflow: open accepted minion key"), errMinionKey)
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return minionKey{}, errmark.Mark(errors.Wrap(err, "oduflow: stat accepted minion key"), errMinionKey)
	}
	if !st.Mode().IsRegular() || st.Size() > maxMinionKeyBytes {
		return minionKey{}, errors.Wrap(errMinionKey, "accepted minion key is not a small regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxMinionKeyBytes+1))
	if err != nil {
		return minionKey{}, errmark.Mark(errors.Wrap(err, "oduflow: read accepted minion key"), errMinionKey)
	}
	if len(data) > maxMinionKeyBytes {
		return minionKey{}, errors.Wrap(errMinionKey, "accepted minion key too large")
	}
	return parseMinionKey(data)
}

// parseMinionKey parses one PEM RSA public key ("PUBLIC KEY" or "RSA PUBLIC KEY") and fingerprints it.
func parseMinionKey(data []byte) (minionKey, error) {
	blk, _ := pem.Decode(data)
	if blk == nil {
		return minionKey{}, errors.Wrap(errMinionKey, "no PEM block")
	}
	var pub *rsa.PublicKey
	switch blk.Type {
	case "PUBLIC KEY":
		k, err := x509.ParsePKIXPublicKey(blk.Bytes)
		if err != nil {
			return minionKey{}, errors.Wrap(errMinionKey, "bad SubjectPublicKeyInfo")
		}
		rk, ok := k.(*rsa.PublicKey)
		if !ok {
			return minionKey{}, errors.Wrap(errMinionKey, "not an RSA key")
		}
		pub = rk
	case "RSA PUBLIC KEY":
		k, err := x509.ParsePKCS1PublicKey(blk.Bytes)
		if err != nil {
			return minionKey{}, errors.Wrap(errMinionKey, "bad PKCS#1 public key")
		}
		pub = k
	default:
		return minionKey{}, errors.Wrap(errMinionKey, "not a public key PEM block")
	}
	if pub.N.BitLen() < receiptproof.MinKeyBits {
		return minionKey{}, errors.Wrap(errMinionKey, "RSA key shorter than 2048 bits")
	}
	return minionKey{Public: pub, SHA256: keyFingerprint(pub)}, nil
}

// keyFingerprint is the lowercase hex SHA-256 of pub's DER SubjectPublicKeyInfo.
func keyFingerprint(pub *rsa.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// minionKey loads the accepted key of c's minion and checks it against the fingerprint pinned in c at
// preflight. A claim without a pin (dispatched by a version before receipt proofs) is verified
// against the currently accepted key.
func (d *Dispatcher) minionKey(ctx context.Context, c *claims.Claim) (*rsa.PublicKey, error) {
	k, err := loadMinionKey(ctx, d.pkiDir, c.MinionID)
	if err != nil {
		return nil, err
	}
	if c.MinionKeySHA256 != "" && k.SHA256 != c.MinionKeySHA256 {
		return nil, errMinionKeyChanged
	}
	return k.Public, nil
}
