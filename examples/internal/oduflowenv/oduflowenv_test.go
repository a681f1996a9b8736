package oduflowenv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oduflow/oduflow-go/profiles"
)

func TestFromEnvDefaultsAndEtcd(t *testing.T) {
	env := map[string]string{"ODUFLOW_SALT_MASTER": "tcp://m:4506", "ODUFLOW_CLAIMS": "etcd://h:2379/p",
		"ODUFLOW_ETCD_USER": "u", "ODUFLOW_ETCD_PASSWORD": "pw"}
	s := FromEnv(func(k string) string { return env[k] })
	if s.StateDir != DefaultStateDir || s.PKIDir != DefaultPKIDir || s.Master != "tcp://m:4506" || !s.EtcdClaims() {
		t.Fatalf("settings: %+v", s)
	}
	if got := strings.Join(s.Etcd.Env(), " "); !strings.Contains(got, "ODUFLOW_ETCD_USER=u") || !strings.Contains(got, "ODUFLOW_ETCD_PASSWORD=pw") {
		t.Fatalf("etcd env: %s", got)
	}
	if _, err := s.EtcdOptions(); err != nil {
		t.Fatal(err)
	}
}

// Every refusal is an *Error of kind ErrUsage whose message names the setting and the expected form.
func TestCheckMasterMessages(t *testing.T) {
	ok := Settings{Master: "tcp://127.0.0.1:4506", Events: "unix:///run/x.ipc", KeyFile: "/k/.root_key"}
	if err := ok.CheckMaster("x", true); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mod  func(*Settings)
		want string
	}{
		{func(s *Settings) { s.Master = "" }, "x: missing --master (or ODUFLOW_SALT_MASTER), e.g. tcp://127.0.0.1:4506"},
		{func(s *Settings) { s.Master = "127.0.0.1:4506" }, `x: --master "127.0.0.1:4506": want tcp://host:port`},
		{func(s *Settings) { s.Events = "" }, "x: missing --events (or ODUFLOW_SALT_EVENTS)"},
		{func(s *Settings) { s.Events = "/run/x.ipc" }, `want unix:///path or tcp://host:port`},
		{func(s *Settings) { s.KeyFile = "" }, "x: no credentials"},
		{func(s *Settings) { s.KeyFile, s.Eauth, s.User = "", "pam", "u" }, "x: --eauth needs the password in ODUFLOW_SALT_PASSWORD"},
	} {
		s := ok
		tc.mod(&s)
		err := s.CheckMaster("x", true)
		var ce *Error
		if !errors.As(err, &ce) || !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want ErrUsage with %q", s, err, tc.want)
		}
	}
}

func TestClaimDirAndStateDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		claims, state, want, err string
	}{
		{"", dir, dir, ""},
		{"file:" + dir + "/c", "", dir + "/c", ""},
		{dir + "/d", "", dir + "/d", ""},
		{"etcd://h:1/p", "", "", "an etcd store is not a directory"},
		{"s3://b", "", "", `unknown scheme "s3"`},
		{"", " ", "", "empty claim store directory"},
		{file, "", "", "is not a directory"},
	} {
		got, err := Settings{Claims: tc.claims, StateDir: tc.state}.ClaimDir()
		if tc.err == "" && (err != nil || got != tc.want) || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrUsage)) {
			t.Errorf("claims %q state %q: %q %v, want %q %q", tc.claims, tc.state, got, err, tc.want, tc.err)
		}
	}
	if err := OpenStateDir(filepath.Join(dir, "s")); err != nil {
		t.Fatal(err)
	}
	if err := OpenStateDir(file); !errors.Is(err, ErrUsage) {
		t.Fatalf("a file as state dir: %v", err)
	}
}

// An etcd that does not answer is ErrUnreachable (nothing was written), never a usage error.
func TestOpenEtcdUnreachable(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Settings{Claims: "etcd://127.0.0.1:1/p"}.OpenEtcd(ctx)
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("%v, want ErrUnreachable", err)
	}
}

func TestIDsProfilesAndExitNames(t *testing.T) {
	if err := CheckMinion("s", "client-7c9e6679-7425-40de-944b-e07fc1f90ae7"); err != nil {
		t.Fatal(err)
	}
	if err := CheckMinionIn("s", "nope", profiles.DefaultTable()); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "want client-<canonical lowercase UUID>") {
		t.Fatal(err)
	}
	if err := CheckMinion("s", "web01.lab.example"); err != nil {
		t.Fatal(err)
	}
	if err := CheckMinion("s", "web*"); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "want a Salt minion id") {
		t.Fatal(err)
	}
	if err := CheckRequest("s", "R"); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "want a canonical lowercase UUID") {
		t.Fatal(err)
	}
	if _, err := FixedProfile("s", "custom"); !errors.Is(err, ErrUsage) {
		t.Fatal(err)
	}
	if p, err := FixedProfile("s", "configure"); err != nil || p != "configure" {
		t.Fatal(p, err)
	}
	for code, name := range map[int]string{0: "ok", 1: "failed", 2: "usage", 3: "unreachable", 4: "refused", 5: "unknown", 6: "damaged", 7: "still_running", 9: ""} {
		if got := ExitName(code); got != name {
			t.Errorf("ExitName(%d) = %q, want %q", code, got, name)
		}
	}
	if KeyUser("/x/.salt_key") != "salt" || KeyUser("/x/key") != "root" {
		t.Fatal("KeyUser")
	}
}

// ODUFLOW_PROFILES: unset is the seeds' table; a table that does not load is refused as usage, naming
// the variable, the file and the line; a good one is read with its policy and profiles.
func TestSettingsTable(t *testing.T) {
	ctx := context.Background()
	if tb, err := (Settings{}).Table(ctx); err != nil || !tb.IsDefault() {
		t.Fatalf("unset: %v", err)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("profiles:\n  web: {sls: [roles.web]}\n  custom: {highstate: true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := FromEnv(func(k string) string { return map[string]string{"ODUFLOW_PROFILES": bad}[k] }).Table(ctx)
	if !errors.Is(err, ErrUsage) || !errors.Is(err, profiles.ErrInvalidTable) ||
		!strings.Contains(err.Error(), "ODUFLOW_PROFILES: profiles: "+bad+":3: profiles.custom: custom is reserved") {
		t.Fatalf("bad table: %v", err)
	}
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("profiles:\n  webserver: {sls: [roles.webserver]}\nminion_ids: salt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tb, err := (Settings{Profiles: good}).Table(ctx)
	if err != nil || tb.MinionIDs() != profiles.IDsSalt || CheckMinionIn("s", "web01.lab.example", tb) != nil {
		t.Fatalf("good table: %v", err)
	}
	if _, err := ProfileIn("s", "configure", tb); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "want one of webserver") {
		t.Fatalf("profile outside the table: %v", err)
	}
}
