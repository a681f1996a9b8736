package service_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/examples/controller/internal/service"
	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
)

// F5: every file that carries authority is checked like the token file, at Open, before anything is
// connected: a client CA bundle, ODUFLOW_CLIENTS or the server certificate others can write, a token
// file owned by another user, a token reached through a symbolic link in a directory others can write,
// a catalog directory others can write are refused, each naming its variable and not the path; a FIFO as
// the token file is refused at once instead of hanging Open past its context. A Kubernetes-style secret
// mount (token -> ..data/token -> ..2026_12_07/token, in a sticky world-writable root) is accepted.
// Before: Open accepted the first five and hung on the FIFO.
func TestF5AuthorityFilesCheckedLikeTheToken(t *testing.T) {
	// Not parallel: it bounds how soon a refusal comes (a second).
	env := startSim(t)
	env.addMinion()
	dir := t.TempDir()
	ca := newCA(t, "oduflow clients")
	srvCert, srvKey := ca.issue(t, "controller", true)
	mtls := func(c *service.Config) {
		c.Auth = service.AuthConfig{ClientsFile: c.Auth.ClientsFile,
			TLSCert: writeFile(t, dir, "server.pem", srvCert, 0o644), TLSKey: writeFile(t, dir, "server.key", srvKey, 0o600),
			TLSClientCA:   writeFile(t, dir, "ca.pem", ca.pem, 0o644),
			TLSPrincipals: writeFile(t, dir, "principals", []byte("alice observer acme\n"), 0o600)}
	}
	open := func(edit ...func(*service.Config)) error {
		cfg, _ := env.serverConfig()
		for _, f := range edit {
			f(&cfg)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			svc, err := service.Open(ctx, cfg)
			if err == nil {
				_ = svc.Close(context.Background())
			}
			done <- err
		}()
		select {
		case err := <-done:
			return err
		case <-time.After(6 * time.Second):
			t.Fatal("Open hung past its 3 s context")
			return nil
		}
	}
	if err := open(mtls); err != nil {
		t.Fatalf("the safe set-up: %v", err)
	}
	worldWritable := func(p string) { t.Helper(); must(t, os.Chmod(p, 0o666)) }
	otherDir := filepath.Join(t.TempDir(), "open")
	must(t, os.Mkdir(otherDir, 0o777))
	must(t, os.Chmod(otherDir, 0o777))
	fifo := filepath.Join(t.TempDir(), "fifo")
	must(t, syscall.Mkfifo(fifo, 0o600))
	defer func() { // let an open that did block (the old code) go
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}()
	cases := []struct {
		name, env string
		edit      func(*service.Config)
	}{
		{"client CA 0666", "ODUFLOW_TLS_CLIENT_CA", func(c *service.Config) { mtls(c); worldWritable(c.Auth.TLSClientCA) }},
		{"server certificate 0666", "ODUFLOW_TLS_CERT", func(c *service.Config) { mtls(c); worldWritable(c.Auth.TLSCert) }},
		{"ODUFLOW_CLIENTS 0666", "ODUFLOW_CLIENTS", func(c *service.Config) { worldWritable(c.Auth.ClientsFile) }},
		{"catalog directory 0777", "ODUFLOW_CATALOG_DIR", func(c *service.Config) {
			c.CatalogDir = filepath.Join(t.TempDir(), "catalog")
			must(t, os.Mkdir(c.CatalogDir, 0o700))
			must(t, os.Chmod(c.CatalogDir, 0o777))
		}},
		{"token through a link in a 0777 directory", "ODUFLOW_AUTH_TOKENS", func(c *service.Config) {
			link := filepath.Join(otherDir, "tokens")
			_ = os.Remove(link)
			must(t, os.Symlink(c.Auth.TokensFile, link))
			c.Auth.TokensFile = link
		}},
		{"token file a FIFO", "ODUFLOW_AUTH_TOKENS", func(c *service.Config) { c.Auth.TokensFile = fifo }},
	}
	if os.Geteuid() == 0 {
		cases = append(cases, struct {
			name, env string
			edit      func(*service.Config)
		}{"token file of another user", "ODUFLOW_AUTH_TOKENS", func(c *service.Config) { must(t, os.Chown(c.Auth.TokensFile, 4242, 4242)) }})
	}
	for _, tc := range cases {
		t0 := time.Now()
		err := open(tc.edit)
		var ce *oduflowenv.Error
		if err == nil || !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), tc.env+":") {
			t.Fatalf("%s: %v, want a refusal naming %s", tc.name, err, tc.env)
		}
		if strings.Contains(err.Error(), "/") {
			t.Fatalf("%s: the message names a path: %v", tc.name, err)
		}
		if took := time.Since(t0); took > time.Second {
			t.Fatalf("%s: refused after %v", tc.name, took)
		}
	}

	// A Kubernetes secret volume: a sticky 1777 root with ..data -> ..<timestamp>, token -> ..data/token.
	vol := filepath.Join(t.TempDir(), "secret")
	must(t, os.Mkdir(vol, 0o700))
	must(t, os.Chmod(vol, 0o777|os.ModeSticky))
	must(t, os.Mkdir(filepath.Join(vol, "..2026_12_07"), 0o755))
	if err := open(func(c *service.Config) {
		b, err := os.ReadFile(c.Auth.TokensFile)
		must(t, err)
		must(t, os.WriteFile(filepath.Join(vol, "..2026_12_07", "tokens"), b, 0o600))
		must(t, os.Symlink("..2026_12_07", filepath.Join(vol, "..data")))
		must(t, os.Symlink("..data/tokens", filepath.Join(vol, "tokens")))
		c.Auth.TokensFile = filepath.Join(vol, "tokens")
	}); err != nil {
		t.Fatalf("a Kubernetes secret mount: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
