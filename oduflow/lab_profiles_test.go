package oduflow

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// TestLiveFixedProfiles runs the two fixed profiles the lab kit ships no role for, volume_resize and
// credentials, through the Dispatcher against a real salt-master (the harness roles of
// examples/harness/salt/roles are installed into the lab's file roots when missing or different), then
// production, and checks that the minion's cache directory holds no raw state return afterwards (no
// *.p file: no sls.p, no *.cache.p, no parallel results). It needs the lab's ODUFLOW_SALT_* variables and
// ODUFLOW_SALTLAB_DIR, and skips otherwise.
func TestLiveFixedProfiles(t *testing.T) {
	master, events := os.Getenv("ODUFLOW_SALT_MASTER"), os.Getenv("ODUFLOW_SALT_EVENTS")
	keyFile, minion, labDir := os.Getenv("ODUFLOW_SALT_KEY_FILE"), os.Getenv("ODUFLOW_SALT_MINION"), os.Getenv("ODUFLOW_SALTLAB_DIR")
	if master == "" || events == "" || keyFile == "" || minion == "" || labDir == "" {
		t.Skip("ODUFLOW_SALT_MASTER/EVENTS/KEY_FILE/MINION or ODUFLOW_SALTLAB_DIR unset: no lab to test against " +
			"(eval \"$(bash saltlab.sh env)\" with the lab running)")
	}
	for _, role := range []string{"client_storage_resize.sls", "client_credentials.sls"} {
		want, err := os.ReadFile(filepath.Join("..", "examples", "harness", "salt", "roles", role))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(labDir, "salt", "roles", role)
		if have, err := os.ReadFile(dst); err != nil || !bytes.Equal(have, want) {
			if err := os.WriteFile(dst, want, 0o644); err != nil {
				t.Skipf("cannot install the harness role %s into the lab's file roots: %v", role, err)
			}
		}
	}
	client, err := salt.NewClient(master, salt.WithAuth(salt.UserKey("root", keyFile)), salt.WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Close() }()
	d, err := New(client, SaltEvents(events), WithClaimDir(claimDir(t)), WithLogger(quietLogger()), WithPKIDir(labPKIDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = d.Close(closedContext()) }()
	// Salt's own state.apply (other live tests use it as a reference) writes sls.p and highstate.cache.p:
	// what counts is a *.p file these runs created or rewrote.
	cache := filepath.Join(labDir, "cache", "minion")
	before := rawReturnsSince(t, cache, nil)
	for _, p := range []receipt.Profile{receipt.ProfileVolumeResize, receipt.ProfileCredentials} {
		r, _ := labRun(t, d, minion, p)
		if r.Status != receipt.StatusSucceeded || r.Total != 2 || r.Passed != 2 {
			t.Fatalf("%s: %+v, want succeeded 2/2", p, r)
		}
	}
	if r, _ := labRun(t, d, minion, receipt.ProfileProduction); r.Status != receipt.StatusFailed || r.Passed >= r.Total {
		t.Fatalf("production: %+v", r)
	}
	if raw := rawReturnsSince(t, cache, before); len(raw) != 0 {
		t.Fatalf("raw state returns persisted on the minion by these runs: %q", raw)
	}
	t.Logf("find %s -name '*.p' -newer <the first run>: 0 files after volume_resize, credentials and production "+
		"(%d older *.p files, from Salt's own state.apply)", cache, len(before))
}

// rawReturnsSince lists the *.p files under dir (raw state returns Salt persists: sls.p, *.cache.p,
// parallel results) that are not in before with the same modification time and size; before nil lists
// them all.
func rawReturnsSince(t *testing.T, dir string, before map[string]string) map[string]string {
	t.Helper()
	seen := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".p") {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		stamp := info.ModTime().String() + "/" + strconv.FormatInt(info.Size(), 10)
		if before == nil || before[path] != stamp {
			seen[path] = stamp
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk the minion's cache directory %s: %v", dir, err)
	}
	return seen
}
