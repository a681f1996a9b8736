package oduflow

// Every check in this file uses the standard library's errors package only: callers that write
// import "errors" must see the sentinels and typed errors, whatever this module wraps them with.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/oduflow/oduflow-go/internal/safefile"
	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/receipt"
)

func TestStdlibErrorsInvalidInput(t *testing.T) {
	ctx := context.Background()
	_, err := New(nil, nil)
	if !errors.Is(err, claims.ErrInvalidInput) {
		t.Fatalf("New(nil, nil): %v", err)
	}
	wantOneLine(t, "New(nil, nil)", err)
	d := newOffline(t, newFakeClock())
	_, err = d.Status(ctx, "not-a-minion", uuid.NewString(), receipt.ProfileConfigure)
	if !errors.Is(err, claims.ErrInvalidInput) || !errors.Is(err, receipt.ErrInvalidID) {
		t.Fatalf("bad minion id: %v", err)
	}
	wantOneLine(t, "bad minion id", err)
	if !strings.Contains(err.Error(), "want client-<lowercase UUID>") {
		t.Fatalf("the message does not name the wanted form: %v", err)
	}
	_, err = d.Start(ctx, newMinionID(), "not-a-request", receipt.ProfileConfigure)
	if !errors.Is(err, claims.ErrInvalidInput) || !errors.Is(err, receipt.ErrInvalidID) {
		t.Fatalf("bad request id: %v", err)
	}
	wantOneLine(t, "bad request id", err)
	if err := d.runDetachedWorker(ctx, []string{"only-one"}); !errors.Is(err, claims.ErrInvalidInput) {
		t.Fatalf("worker arguments: %v", err)
	}
}

func TestStdlibErrorsMismatch(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	d := newOffline(t, clk)
	c := newClaim(clk, receipt.ProfileConfigure)
	putClaim(t, d, c)
	var me *mismatchError
	_, err := d.Status(ctx, c.MinionID, c.RequestID, receipt.ProfileProduction)
	if !errors.Is(err, errProfileMismatch) || !errors.As(err, &me) || me.Field != "profile" || me.Bound != "configure" {
		t.Fatalf("profile mismatch: %v", err)
	}
	wantOneLine(t, "ErrMismatch", err)
	_, err = d.Start(ctx, newMinionID(), c.RequestID, receipt.ProfileConfigure)
	if !errors.Is(err, errMinionMismatch) || !errors.As(err, &me) || me.Field != "minion_id" || me.Bound != c.MinionID {
		t.Fatalf("minion mismatch: %v", err)
	}
}

func TestStdlibErrorsFileClaimStore(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	fs, err := filestore.Open(claimDir(t))
	if err != nil {
		t.Fatal(err)
	}
	c := newClaim(clk, receipt.ProfileConfigure)
	if err := fs.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	err = fs.Create(ctx, c)
	if !errors.Is(err, claims.ErrClaimExists) || !errors.Is(err, safefile.ErrExist) {
		t.Fatalf("claim exists: %v", err)
	}
	wantOneLine(t, "ErrClaimExists", err)
	_, err = fs.Get(ctx, uuid.NewString())
	if !errors.Is(err, claims.ErrNoClaim) {
		t.Fatalf("no claim: %v", err)
	}
	wantOneLine(t, "ErrNoClaim", err)
	cur, err := fs.Get(ctx, c.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	next := cur.Clone()
	next.Phase = claims.PhaseDispatching
	if _, err := fs.CompareAndSwap(ctx, next); err != nil {
		t.Fatal(err)
	}
	_, err = fs.CompareAndSwap(ctx, next)
	if !errors.Is(err, claims.ErrConflict) { // next's generation is stale now
		t.Fatalf("conflict: %v", err)
	}
	wantOneLine(t, "ErrConflict", err)

	// A released request lock fences nothing: the guarded update is refused and writes nothing.
	cur, err = fs.Get(ctx, c.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := fs.TryRequestLock(ctx, c.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fs.TryRequestLock(ctx, c.RequestID)
	if !errors.Is(err, claims.ErrLeaseBusy) || !errors.Is(err, safefile.ErrLocked) {
		t.Fatalf("lease held: %v", err)
	}
	wantOneLine(t, "ErrLeaseBusy (request lock)", err)
	if err := lease.Release(); err != nil {
		t.Fatal(err)
	}
	next = cur.Clone()
	next.Phase = claims.PhaseDispatched
	_, err = fs.CompareAndSwapHeld(ctx, next, lease)
	if !errors.Is(err, claims.ErrLeaseLost) {
		t.Fatalf("lease lost: %v", err)
	}
	wantOneLine(t, "ErrLeaseLost", err)
	if after, err := fs.Get(ctx, c.RequestID); err != nil || after.Generation != cur.Generation {
		t.Fatalf("written despite the lost lease: %+v %v", after, err)
	}

	// The client lease held by one caller is busy for another.
	held, err := fs.AcquireClientLease(ctx, c.MinionID, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Release() }()
	_, err = fs.AcquireClientLease(ctx, c.MinionID, 50*time.Millisecond)
	if !errors.Is(err, claims.ErrLeaseBusy) || !errors.Is(err, safefile.ErrLocked) {
		t.Fatalf("lease busy: %v", err)
	}
	wantOneLine(t, "ErrLeaseBusy (client lease)", err)

	// An unreadable sibling claim: typed, corrupt, and its cause still visible.
	if err := os.Remove(filepath.Join(fs.Dir(), claimName(c.RequestID))); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(fs.Dir(), claimName(c.RequestID)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = fs.ListByClient(ctx, c.MinionID)
	var uc unreadableClaim
	var ue *safefile.UnsafePathError
	if !errors.Is(err, claims.ErrCorruptClaim) || !errors.Is(err, safefile.ErrNotRegular) || !errors.As(err, &uc) ||
		uc.UnreadableRequestID() != c.RequestID || !errors.As(err, &ue) || ue.Reason != "not_regular" {
		t.Fatalf("unreadable sibling: %v", err)
	}
	wantOneLine(t, "ErrCorruptClaim", err)
	if _, err := fs.Get(ctx, c.RequestID); !errors.Is(err, safefile.ErrNotRegular) || !errors.Is(err, safefile.ErrUnsafePath) {
		t.Fatalf("fifo claim: %v", err)
	}
}

func TestStdlibErrorsReceiptBinding(t *testing.T) {
	b := receipt.Binding{MinionID: newMinionID(), RequestID: uuid.NewString(), JID: "20261129120000000001",
		Profile: receipt.ProfileConfigure}
	r := receipt.Receipt{Protocol: 1, MinionID: b.MinionID, RequestID: b.RequestID, JID: "20261129120000000002",
		Profile: receipt.ProfileConfigure, Status: receipt.StatusSucceeded, Passed: 1, Total: 1}
	err := b.Check(r)
	var be *receipt.InvalidReceiptError
	if !errors.Is(err, receipt.ErrInvalidReceipt) || !errors.As(err, &be) || be.Reason != "binding" || be.Field != "jid" {
		t.Fatalf("binding mismatch: %v", err)
	}
	if _, err := receipt.Decode([]byte(`{"protocol":1}`)); !errors.Is(err, receipt.ErrInvalidReceipt) {
		t.Fatalf("invalid receipt: %v", err)
	}
}

func TestStdlibErrorsInvalidCustomSource(t *testing.T) {
	ctx := context.Background()
	bad := []byte("id:\n  cmd.run:\n    - name: {{ pillar.secret }}\n")
	err := profiles.ValidateCustom(bad)
	var ce *profiles.CustomError
	if !errors.Is(err, profiles.ErrInvalidCustom) || !errors.As(err, &ce) || ce.Code != "template_syntax" {
		t.Fatalf("ValidateCustom: %v", err)
	}
	// Through the catalog, the way a definition is stored: marked ErrInvalid, the compiler's typed
	// error still reachable.
	cat, err := catalog.Open(filepath.Join(t.TempDir(), "catalog"), catalog.WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	_, err = cat.CreateDefinition(ctx, "acme", "motd", bad)
	ce = nil
	if !errors.Is(err, catalog.ErrInvalid) || !errors.Is(err, profiles.ErrInvalidCustom) || !errors.As(err, &ce) ||
		ce.Code != "template_syntax" {
		t.Fatalf("CreateDefinition: %v", err)
	}
}
