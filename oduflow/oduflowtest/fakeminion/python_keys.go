package fakeminion

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"

	"github.com/cockroachdb/errors"
)

// defaultPython prefers Debian's /usr/bin/python3: the crypto backends Salt uses on the minion
// (python3-pycryptodome, python3-m2crypto, python3-cryptography) are installed for it, while a pyenv
// or venv python3 earlier on PATH usually has none of them.
func defaultPython() string {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return "python3"
}

// ProvisionKey gives minionID a fresh 2048-bit Salt key pair: the private key, PEM "RSA PRIVATE KEY"
// (PKCS#1, as Salt writes it), goes to MinionDir(minionID)/pki/minion.pem (its pki_dir), read-only.
// It returns the public key (PEM "PUBLIC KEY") for the master's pki dir (minions/<id>).
func (h *PythonHost) ProvisionKey(minionID string) ([]byte, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, errors.Wrap(err, "fakeminion: generate key")
	}
	dir := filepath.Join(h.MinionDir(minionID), "pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, errors.Wrap(err, "fakeminion: create pki dir")
	}
	priv := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	if err := os.WriteFile(filepath.Join(dir, "minion.pem"), priv, 0o400); err != nil {
		return nil, errors.Wrap(err, "fakeminion: write minion key")
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		return nil, errors.Wrap(err, "fakeminion: encode public key")
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
