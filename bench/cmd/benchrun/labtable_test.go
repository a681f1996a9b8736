package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/receipt"
)

// labWithTable makes a lab directory whose minion config holds cfg as its oduflow_profiles.conf (none
// when cfg is nil).
func labWithTable(t *testing.T, cfg []byte) string {
	t.Helper()
	dir := t.TempDir()
	if cfg == nil {
		return dir
	}
	if err := os.MkdirAll(filepath.Join(dir, "etc", "minion.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(labTableFile(dir), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestConfigureTargetHostNamedLab: a lab set up with a host-named minion (web01.lab.example) runs its
// minion with a "salt" id-policy table; the configure row must dispatch with that very table (same
// digest, so no profile_table_mismatch) and a profile of it, and the table must accept the host name.
// Before, the row used the default (seeds) table and every round failed at the readiness Ping with
// "invalid minion id".
func TestConfigureTargetHostNamedLab(t *testing.T) {
	want, err := profiles.ParseTable([]byte("minion_ids: salt\nprofiles:\n  webserver: {sls: [roles.webserver, roles.monitoring]}\n  full: {highstate: true}\n"), "lab.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lab := labWithTable(t, append([]byte("schedule: {}\n"), want.MinionConfig()...))
	tb, p, err := configureTarget(lab, "")
	if err != nil {
		t.Fatal(err)
	}
	if tb.Digest() != want.Digest() || p != "webserver" {
		t.Fatalf("table %s profile %q, want %s webserver", tb.Digest(), p, want.Digest())
	}
	if err := tb.ValidateMinionID("web01.lab.example"); err != nil {
		t.Fatalf("the lab's table refuses its minion: %v", err)
	}
	if _, p, err := configureTarget(lab, "full"); err != nil || p != "full" {
		t.Fatalf("-profile full: %q %v", p, err)
	}
	if _, _, err := configureTarget(lab, "configure"); err == nil {
		t.Fatal("a profile outside the minion's table was accepted")
	}
}

// TestConfigureTargetDefault: a lab minion without a table (the client-<uuid> lab) keeps the default
// table and the configure profile; a table the minion config spells wrong is an error, not a silent
// fallback to the default.
func TestConfigureTargetDefault(t *testing.T) {
	for name, lab := range map[string]string{"no lab dir": "", "no table file": labWithTable(t, nil),
		"no table key": labWithTable(t, []byte("oduflow_receipt_dir: /tmp/x\n"))} {
		tb, p, err := configureTarget(lab, "")
		if err != nil || !tb.IsDefault() || p != receipt.ProfileConfigure {
			t.Fatalf("%s: default %v profile %q err %v", name, tb != nil && tb.IsDefault(), p, err)
		}
	}
	bad := labWithTable(t, []byte("oduflow_profiles: {\"minion_ids\":\"any\",\"profiles\":{}}\n"))
	if _, _, err := configureTarget(bad, ""); !errors.Is(err, profiles.ErrInvalidTable) {
		t.Fatalf("a bad table: %v, want ErrInvalidTable", err)
	}
}
