package oduflow

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/receipt"
)

// TestNewRefusesStoreWindowsOtherThanTimers: a store's status windows are given at its construction and
// New never changes them. A store built with other windows than the Dispatcher's Timers is refused with
// a *StatusWindowsError (claims.ErrInvalidInput) naming both pairs and where each comes from, before
// anything is written, and the store keeps its own windows; a store built with the Timers' windows is
// accepted, and the store New opens itself gets the Timers' windows.
func TestNewRefusesStoreWindowsOtherThanTimers(t *testing.T) {
	e := startSim(t)
	tm := testTimers()
	fs, err := filestore.Open(e.dir) // the defaults: DefaultTimers' windows, not testTimers'
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(e.client, e.events(), WithClaimStore(fs), WithTimers(tm), WithLogger(quietLogger()),
		WithPKIDir(e.sim.PKIDir()))
	if err == nil {
		_ = d.Close(closedContext())
		t.Fatal("New accepted a store whose status windows differ from its Timers")
	}
	var we *StatusWindowsError
	if !errors.As(err, &we) || !errors.Is(err, claims.ErrInvalidInput) {
		t.Fatalf("New: %v (%T), want a *StatusWindowsError matching claims.ErrInvalidInput", err, err)
	}
	def := DefaultTimers()
	if we.StoreLaunchGrace != def.LaunchGrace || we.StoreStatusExpiry != def.StatusExpiry ||
		we.TimersLaunchGrace != tm.LaunchGrace || we.TimersStatusExpiry != tm.StatusExpiry {
		t.Fatalf("StatusWindowsError %+v, want the store's %v/%v and the Timers' %v/%v", *we,
			def.LaunchGrace, def.StatusExpiry, tm.LaunchGrace, tm.StatusExpiry)
	}
	for _, want := range []string{def.LaunchGrace.String(), def.StatusExpiry.String(), tm.LaunchGrace.String(),
		tm.StatusExpiry.String(), "constructor", "WithTimers", "nothing written"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if g, x := fs.StatusWindows(); g != def.LaunchGrace || x != def.StatusExpiry {
		t.Fatalf("New changed the store it was given: windows %v/%v", g, x)
	}
	if claimsIn(t, e.dir) != 0 {
		t.Fatal("a refused New wrote a claim")
	}

	// The store built with the Timers' windows is accepted, and works.
	ok, err := filestore.Open(e.dir, testWindows())
	if err != nil {
		t.Fatal(err)
	}
	d = e.dispatcher(WithClaimStore(ok))
	if _, err := d.Status(context.Background(), e.addMinion().ID(), receipt.NewRequestID(), receipt.ProfileConfigure); err != nil {
		t.Fatalf("Status on an accepted store: %v", err)
	}

	// The store New opens itself (WithClaimDir) has the Timers' windows.
	own := e.dispatcher()
	if g, x := own.windows.StatusWindows(); g != tm.LaunchGrace || x != tm.StatusExpiry {
		t.Fatalf("the file store New opened has windows %v/%v, want the Timers' %v/%v", g, x, tm.LaunchGrace, tm.StatusExpiry)
	}
}

// claimsIn counts the claim records in a claim directory.
func claimsIn(t *testing.T, dir string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	return len(m)
}
