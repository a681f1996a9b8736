package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oduflow/oduflow-go/profiles"
)

// ODUFLOW_CLIENTS follows the profile table's id policy: host names under minion_ids: salt, client-<uuid>
// only under the seeds' table; the refusal names the line, never the value.
func TestClientsFollowTheTablePolicy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "clients")
	if err := os.WriteFile(path, []byte("web01.lab.example acme\nclient-7c9e6679-7425-40de-944b-e07fc1f90ae7 beta\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	salt, err := profiles.ParseTable([]byte("profiles:\n  webserver: {sls: [roles.webserver]}\nminion_ids: salt\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	got, err := loadClients(ctx, "ODUFLOW_CLIENTS", path, salt)
	if err != nil || got["web01.lab.example"] != "acme" || len(got) != 2 {
		t.Fatalf("salt policy: %v %v", got, err)
	}
	_, err = loadClients(ctx, "ODUFLOW_CLIENTS", path, profiles.DefaultTable())
	if err == nil || !strings.Contains(err.Error(), "line 1") || !strings.Contains(err.Error(), "client-<canonical lowercase UUID>") ||
		strings.Contains(err.Error(), "web01") {
		t.Fatalf("seeds policy: %v", err)
	}
	if err := os.WriteFile(path, []byte("web*.lab acme\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadClients(ctx, "ODUFLOW_CLIENTS", path, salt); err == nil || !strings.Contains(err.Error(), "want a Salt minion id") {
		t.Fatalf("glob: %v", err)
	}
}
