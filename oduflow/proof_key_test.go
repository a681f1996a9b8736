package oduflow

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/oduflow/oduflow-go/oduflow/claims"
)

func writeKey(t *testing.T, pki, id string, data []byte) {
	t.Helper()
	dir := filepath.Join(pki, "minions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, id), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadMinionKey(t *testing.T) {
	ctx := context.Background()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	spki, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	sum := sha256.Sum256(spki)
	want := hex.EncodeToString(sum[:])
	pki := t.TempDir()

	forms := map[string][]byte{
		"spki":  pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki}),
		"pkcs1": pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&k.PublicKey)}),
	}
	for name, data := range forms {
		id := newMinionID()
		writeKey(t, pki, id, data)
		got, err := loadMinionKey(ctx, pki, id)
		if err != nil || got.SHA256 != want || got.Public.N.Cmp(k.N) != 0 {
			t.Fatalf("%s: %v %q", name, err, got.SHA256)
		}
	}

	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	smallDER, _ := x509.MarshalPKIXPublicKey(&small.PublicKey)
	bad := map[string][]byte{
		"short key":   pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: smallDER}),
		"private key": pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}),
		"not pem":     []byte("ssh-rsa AAAA"),
		"bad der":     pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte{1, 2, 3}}),
		"too large":   append(forms["spki"], make([]byte, maxMinionKeyBytes)...),
	}
	for name, data := range bad {
		id := newMinionID()
		writeKey(t, pki, id, data)
		if _, err := loadMinionKey(ctx, pki, id); !errors.Is(err, errMinionKey) {
			t.Errorf("%s: %v", name, err)
		}
	}

	// a symlink is never followed, even to a good key
	good := newMinionID()
	writeKey(t, pki, good, forms["spki"])
	link := newMinionID()
	if err := os.Symlink(filepath.Join(pki, "minions", good), filepath.Join(pki, "minions", link)); err != nil {
		t.Fatal(err)
	}
	if _, err := loadMinionKey(ctx, pki, link); !errors.Is(err, errMinionKey) {
		t.Errorf("symlink: %v", err)
	}
	// a FIFO is refused at once (O_NONBLOCK: no writer can make the dispatcher wait)
	fifo := newMinionID()
	if err := syscall.Mkfifo(filepath.Join(pki, "minions", fifo), 0o644); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := loadMinionKey(ctx, pki, fifo); !errors.Is(err, errMinionKey) || time.Since(t0) > time.Second {
		t.Errorf("fifo: %v after %v", err, time.Since(t0))
	}
	// a directory, a missing key, a relative pki dir, a traversal id
	dirID := newMinionID()
	if err := os.Mkdir(filepath.Join(pki, "minions", dirID), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"directory":    func() error { _, err := loadMinionKey(ctx, pki, dirID); return err }(),
		"missing":      func() error { _, err := loadMinionKey(ctx, pki, newMinionID()); return err }(),
		"relative dir": func() error { _, err := loadMinionKey(ctx, "pki", good); return err }(),
	} {
		if !errors.Is(err, errMinionKey) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := loadMinionKey(ctx, pki, "../minions/"+good); !errors.Is(err, claims.ErrInvalidInput) {
		t.Errorf("traversal id: %v", err)
	}
}

func TestClaimKeyPin(t *testing.T) {
	// a claim written before receipt proofs (no minion_key_sha256) still decodes
	c := &claims.Claim{Protocol: 1, MinionID: newMinionID(), RequestID: "0f8fad5b-d9cb-469f-a165-70867728950e",
		Profile: "configure", Role: "roles.client_stack", JID: "20261129154606051411", Phase: claims.PhaseDispatched}
	data, err := encodeClaim(c)
	if err != nil || strings.Contains(string(data), "minion_key_sha256") {
		t.Fatalf("%s %v", data, err)
	}
	if _, err := claims.Decode(data); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	for v, ok := range map[string]bool{strings.Repeat("a", 64): true, "ABC": false, strings.Repeat("A", 64): false} {
		m["minion_key_sha256"] = v
		b, _ := json.Marshal(m)
		got, err := claims.Decode(b)
		if (err == nil) != ok || (ok && got.MinionKeySHA256 != v) {
			t.Errorf("pin %q: %v", v, err)
		}
	}
}
