package proof_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/receipt"
	receiptproof "github.com/oduflow/oduflow-go/receipt/proof"
)

const (
	proofMinion  = "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
	proofRequest = "0f8fad5b-d9cb-469f-a165-70867728950e"
	proofJID     = "20261129154606051411"
)

var (
	keyOnce sync.Once
	keys    [2]*rsa.PrivateKey
)

func testKeys(t testing.TB) (*rsa.PrivateKey, *rsa.PrivateKey) {
	keyOnce.Do(func() {
		for i := range keys {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				panic(err)
			}
			keys[i] = k
		}
	})
	return keys[0], keys[1]
}

func proofReceipt() receipt.Receipt {
	return receipt.Receipt{Protocol: 1, MinionID: proofMinion, RequestID: proofRequest, JID: proofJID,
		Profile: receipt.ProfileConfigure, Status: receipt.StatusSucceeded, Passed: 60, Total: 60}
}

// roundTrip makes the proof look like a decoded Salt return (JSON numbers as int64 like msgpack).
func roundTrip(t testing.TB, v map[string]any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if r, ok := out["receipt"].(map[string]any); ok {
		for k, x := range r {
			if f, ok := x.(float64); ok {
				r[k] = int64(f)
			}
		}
	}
	return out
}

func wantReason(t *testing.T, err error, reason string) {
	t.Helper()
	var pe *receiptproof.Error
	if !errors.Is(err, receiptproof.ErrInvalid) || !errors.As(err, &pe) || pe.Reason != reason {
		t.Fatalf("want proof error %q, got %v", reason, err)
	}
}

func TestVerifyProofGoSigned(t *testing.T) {
	k, other := testKeys(t)
	nonce := receiptproof.NewNonce()
	if err := receiptproof.ValidateNonce(nonce); err != nil || len(nonce) != 64 {
		t.Fatalf("nonce %q: %v", nonce, err)
	}
	r := proofReceipt()
	signed, err := receiptproof.Sign(k, nonce, r)
	if err != nil {
		t.Fatal(err)
	}
	p, err := receiptproof.FromValue(roundTrip(t, signed))
	if err != nil {
		t.Fatal(err)
	}
	got, err := receiptproof.Verify(&k.PublicKey, nonce, p)
	if err != nil || got != r {
		t.Fatalf("verify: %+v %v", got, err)
	}

	// replay: the same proof under another nonce (another request's, or an earlier poll's)
	_, err = receiptproof.Verify(&k.PublicKey, receiptproof.NewNonce(), p)
	wantReason(t, err, receiptproof.ReasonSignature)
	// wrong key: another minion signed it
	_, err = receiptproof.Verify(&other.PublicKey, nonce, p)
	wantReason(t, err, receiptproof.ReasonSignature)
	// a changed receipt field
	for _, mut := range []func(*receipt.Receipt){
		func(r *receipt.Receipt) { r.Status, r.Passed = receipt.StatusFailed, 59 },
		func(r *receipt.Receipt) { r.JID = "20261129154606051412" },
		func(r *receipt.Receipt) { r.MinionID = "client-00000000-0000-4000-8000-000000000000" },
		func(r *receipt.Receipt) { r.RequestID = "00000000-0000-4000-8000-000000000001" },
	} {
		q := p
		mut(&q.Receipt)
		_, err = receiptproof.Verify(&k.PublicKey, nonce, q)
		wantReason(t, err, receiptproof.ReasonSignature)
	}
	// alg mismatch (and the SHA-1 Salt uses for its own signatures is not an option)
	q := p
	q.Alg = "rsa-pkcs1v15-sha1"
	_, err = receiptproof.Verify(&k.PublicKey, nonce, q)
	wantReason(t, err, receiptproof.ReasonAlg)
	// a short key
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	_, err = receiptproof.Verify(&small.PublicKey, nonce, p)
	wantReason(t, err, receiptproof.ReasonKey)
	_, err = receiptproof.Verify(nil, nonce, p)
	wantReason(t, err, receiptproof.ReasonKey)
	// bad nonces
	for _, n := range []string{"", strings.Repeat("a", 31), strings.Repeat("a", 65), strings.Repeat("A", 32), strings.Repeat("g", 32)} {
		if _, err := receiptproof.Verify(&k.PublicKey, n, p); !errors.Is(err, receiptproof.ErrInvalidNonce) {
			t.Fatalf("nonce %q: %v", n, err)
		}
	}
}

func TestProofFromValueMalformed(t *testing.T) {
	k, _ := testKeys(t)
	nonce := receiptproof.NewNonce()
	signed, err := receiptproof.Sign(k, nonce, proofReceipt())
	if err != nil {
		t.Fatal(err)
	}
	good := roundTrip(t, signed).(map[string]any)
	cases := map[string]func(m map[string]any){
		"extra key":       func(m map[string]any) { m["nonce"] = nonce },
		"missing sig":     func(m map[string]any) { delete(m, "sig") },
		"sig not base64":  func(m map[string]any) { m["sig"] = "!!!" },
		"sig empty":       func(m map[string]any) { m["sig"] = "" },
		"sig huge":        func(m map[string]any) { m["sig"] = strings.Repeat("A", 4000) },
		"alg not string":  func(m map[string]any) { m["alg"] = int64(1) },
		"receipt 10 keys": func(m map[string]any) { m["receipt"].(map[string]any)["extra"] = "x" },
		"receipt string":  func(m map[string]any) { m["receipt"] = "succeeded" },
	}
	for name, mut := range cases {
		m := roundTrip(t, signed).(map[string]any)
		mut(m)
		_, err := receiptproof.FromValue(m)
		var pe *receiptproof.Error
		if !errors.Is(err, receiptproof.ErrInvalid) || !errors.As(err, &pe) || pe.Reason != receiptproof.ReasonMalformed {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := receiptproof.FromValue(good); err != nil {
		t.Fatal(err)
	}
	if _, err := receiptproof.FromValue("not a map"); !errors.Is(err, receiptproof.ErrInvalid) {
		t.Fatal(err)
	}
}

// pythonSign signs answer over nonce with the real module's _prove through a stand-in salt.crypt of
// the given backend, loading the PKCS#1 PEM key the way Salt 3006 does.
const pythonSign = `
import json, sys
sys.path.insert(0, sys.argv[1])
sys.dont_write_bytecode = True
import host
backend, pki, nonce, answer = sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5])
if not host.backend_available(backend):
    print(json.dumps({"missing": backend})); sys.exit(0)
host.BEHAVIOR["crypto_backend"] = backend
host.install_fake_salt("3006.0")
mod = host.load_module(pki, "client-5b2f8c1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b", {"opts": {"pki_dir": pki}})
print(json.dumps(mod._prove(nonce, answer)))
`

// TestVerifyProofPythonSigned: the Python module signs with each Salt crypto backend, Go verifies.
func TestVerifyProofPythonSigned(t *testing.T) {
	py := testPython(t)
	k, other := testKeys(t)
	pki := t.TempDir()
	der := x509.MarshalPKCS1PrivateKey(k) // Salt writes "RSA PRIVATE KEY" (PKCS#1)
	if err := os.WriteFile(filepath.Join(pki, "minion.pem"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: der}), 0o400); err != nil {
		t.Fatal(err)
	}
	r := proofReceipt()
	answer, _ := json.Marshal(r.Map())
	for _, backend := range []string{"cryptodome", "m2crypto", "cryptography"} {
		t.Run(backend, func(t *testing.T) {
			nonce := receiptproof.NewNonce()
			cmd := exec.CommandContext(t.Context(), py, "-c", pythonSign, filepath.Join("..", "..", "receipt", "minion"), backend, pki, nonce, string(answer))
			cmd.Env = append(os.Environ(), "PYTHONWARNINGS=ignore")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("python: %v\n%s", err, out)
			}
			var v map[string]any
			if err := json.Unmarshal(out, &v); err != nil {
				t.Fatalf("python output %q: %v", out, err)
			}
			if _, missing := v["missing"]; missing {
				if os.Getenv("CI") == "true" {
					t.Fatalf("crypto backend %s is not installed for %s (CI=true)", backend, py)
				}
				t.Skipf("crypto backend %s is not installed for %s", backend, py)
			}
			p, err := receiptproof.FromValue(roundTrip(t, v))
			if err != nil {
				t.Fatal(err)
			}
			got, err := receiptproof.Verify(&k.PublicKey, nonce, p)
			if err != nil || got != r {
				t.Fatalf("Go refused the Python proof: %+v %v", got, err)
			}
			_, err = receiptproof.Verify(&k.PublicKey, receiptproof.NewNonce(), p)
			wantReason(t, err, receiptproof.ReasonSignature)
			_, err = receiptproof.Verify(&other.PublicKey, nonce, p)
			wantReason(t, err, receiptproof.ReasonSignature)
			// Go's own signature of the same message is byte-identical (PKCS#1 v1.5 is deterministic)
			mine, err := receiptproof.Sign(k, nonce, r)
			if err != nil || mine["sig"] != v["sig"] {
				t.Fatalf("Go and Python signatures differ: %v", err)
			}
		})
	}
}

// fuzzKey is a fixed test key (testdata/proof-test-key.pem, test use only), so seeds can
// hold a valid signature.
func fuzzKey(t testing.TB) *rsa.PrivateKey {
	b, err := os.ReadFile(filepath.Join("testdata", "proof-test-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("no PEM block in the test key")
	}
	k, err := x509.ParsePKCS1PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var proofReasons = map[string]bool{receiptproof.ReasonMalformed: true, receiptproof.ReasonAlg: true,
	receiptproof.ReasonKey: true, receiptproof.ReasonSignature: true}

// FuzzVerifyProof: whatever the bytes, VerifyProof accepts only the exact message the key signed,
// and every refusal is a typed error.
func FuzzVerifyProof(f *testing.F) {
	k := fuzzKey(f)
	nonce := strings.Repeat("0123456789abcdef", 4)
	r := proofReceipt()
	signed, err := receiptproof.Sign(k, nonce, r)
	if err != nil {
		f.Fatal(err)
	}
	body, _ := json.Marshal(signed)
	f.Add(nonce, body)
	f.Add(nonce[:32], body)
	f.Add(nonce, []byte(`{"receipt":{},"alg":"rsa-pkcs1v15-sha256","sig":"AAAA"}`))
	f.Fuzz(func(t *testing.T, nonce string, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		if m, ok := v.(map[string]any); ok {
			if rm, ok := m["receipt"].(map[string]any); ok {
				for key, x := range rm {
					if f, ok := x.(float64); ok && f == float64(int64(f)) {
						rm[key] = int64(f)
					}
				}
			}
		}
		p, err := receiptproof.FromValue(v)
		if err != nil {
			var pe *receiptproof.Error
			if !errors.As(err, &pe) || !proofReasons[pe.Reason] {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		got, err := receiptproof.Verify(&k.PublicKey, nonce, p)
		if err != nil {
			var pe *receiptproof.Error
			if !errors.Is(err, receiptproof.ErrInvalidNonce) && (!errors.As(err, &pe) || !proofReasons[pe.Reason]) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// accepted: it must be exactly what the key signs for this nonce and receipt
		want, err := receiptproof.Sign(k, nonce, got)
		if err != nil || want["sig"] != v.(map[string]any)["sig"] || got != p.Receipt {
			t.Fatalf("accepted a proof the key did not make: %+v", got)
		}
	})
}
