package filestore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oduflow/oduflow-go/internal/filestorehook"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// The file store's attacks of issue 17 ("File store"): each test failed on the code before the fix.

const poolFile = ".locks" // the safe file store's lock pool file in the claim directory

// replacePool deletes the claim directory's lock pool file and creates another in its place (a cleanup
// job, an operator).
func replacePool(t testing.TB, dir string) {
	t.Helper()
	p := filepath.Join(dir, poolFile)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestPoolReplacedReopens: the lock pool file replaced while a holder runs. Before the fix every lock
// operation of the store failed from then on with an untyped error (the dispatcher never recovered:
// every Start answered running, the claim stayed claimed). Now the store opens a pool on the new file:
// new locks work and exclude another process's store again, and a lock taken through the old pool reads
// lost.
func TestPoolReplacedReopens(t *testing.T) {
	ctx := context.Background()
	dir := claimDir(t)
	a, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir) // another process sharing the directory
	if err != nil {
		t.Fatal(err)
	}
	old, err := a.TryRequestLock(ctx, receipt.NewRequestID())
	if err != nil {
		t.Fatal(err)
	}
	replacePool(t, dir)
	if old.Held() {
		t.Error("a lock taken through the replaced pool still reads held")
	}
	req := receipt.NewRequestID()
	lk, err := a.TryRequestLock(ctx, req)
	if err != nil {
		t.Fatalf("TryRequestLock after the pool was replaced: %v", err)
	}
	defer func() { _ = lk.Release() }()
	if held, err := b.RequestLockHeld(ctx, req); err != nil || !held {
		t.Errorf("another store: RequestLockHeld = %v, %v; want true", held, err)
	}
	if _, err := b.TryRequestLock(ctx, req); !errors.Is(err, claims.ErrLeaseBusy) {
		t.Errorf("another store: TryRequestLock of the held lock: %v, want claims.ErrLeaseBusy", err)
	}
	if _, err := a.AcquireClientLease(ctx, newMinionID(), time.Second); err != nil {
		t.Errorf("AcquireClientLease after the pool was replaced: %v", err)
	}
}

// TestPoolReplacedDuringIntent: the lock pool replaced between a worker's lease check and the rename of
// its dispatch intent, and meanwhile another process takes the same client's lease through the new pool
// file, finds the client clear and records its own intent. Before the fix both intent writes succeeded:
// two requests published on one client. Now the first write's lease check after the rename fails
// (claims.ErrLeaseLost: its worker publishes nothing), so at most one intent write succeeds.
func TestPoolReplacedDuringIntent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := claimDir(t)
	minion := newMinionID()
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	var bErr error
	var bOK bool
	var a *Store
	a, err = Open(dir, filestorehook.WithStage(func(stage string) {
		if stage != "before-rename" || !armed.CompareAndSwap(true, false) {
			return
		}
		replacePool(t, dir)
		// Another process: the client lease through the new pool file, the preflight, its intent.
		lease, err := b.AcquireClientLease(ctx, minion, time.Second)
		if err != nil {
			bErr = err
			return
		}
		defer func() { _ = lease.Release() }()
		c2 := newTestClaim(minion)
		if err := b.Create(ctx, c2); err != nil {
			bErr = err
			return
		}
		lk, err := b.TryRequestLock(ctx, c2.RequestID)
		if err != nil {
			bErr = err
			return
		}
		defer func() { _ = lk.Release() }()
		open, err := b.ListUnresolved(ctx, minion)
		if err != nil {
			bErr = err
			return
		}
		for _, o := range open {
			if o.RequestID != c2.RequestID && o.Quarantining() {
				return // the client is not clear: b publishes nothing
			}
		}
		next := c2.Clone()
		now := time.Now().UTC()
		next.Phase, next.DispatchedAt = claims.PhaseDispatching, &now
		// The first intent holds the client's fence counter lock while this runs inside it, so this
		// intent can only wait for it: two seconds say as much as the store's 30 s wait would.
		bctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, bErr = b.CompareAndSwapHeld(bctx, next, lk, lease)
		bOK = bErr == nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	c1 := newTestClaim(minion)
	if err := a.Create(ctx, c1); err != nil {
		t.Fatal(err)
	}
	lk, err := a.TryRequestLock(ctx, c1.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := a.AcquireClientLease(ctx, minion, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	next := c1.Clone()
	now := time.Now().UTC()
	next.Phase, next.DispatchedAt = claims.PhaseDispatching, &now
	armed.Store(true)
	_, aErr := a.CompareAndSwapHeld(ctx, next, lk, lease)
	aOK := aErr == nil
	t.Logf("first intent: %v; second intent (through the new pool): ok %v, %v", aErr, bOK, bErr)
	if aOK && bOK {
		t.Fatal("two intents recorded for one client under one client lease")
	}
	if !aOK && !errors.Is(aErr, claims.ErrLeaseLost) {
		t.Fatalf("first intent: %v, want claims.ErrLeaseLost", aErr)
	}
}

// newTestClaim is a protocol-1 claim in phase claimed.
func newTestClaim(minion string) *claims.Claim {
	return &claims.Claim{Protocol: claims.Protocol, MinionID: minion, RequestID: receipt.NewRequestID(),
		Profile: receipt.ProfileConfigure, Role: "roles.client_stack", JID: "20261201000000000000",
		Phase: claims.PhaseClaimed, CreatedAt: time.Now().UTC()}
}

// TestClaimStoreFullDisk: the claim directory on a real 1 MiB tmpfs filling up. Before the fix a full
// disk surfaced without a sentinel (the CLI exited 1, "failed"); now every refused write (ENOSPC, and
// EROFS once remounted read-only) matches claims.ErrClaimStore (the CLI's exit 3), and nothing is half-written:
// every claim that exists decodes, no temporary file stays, a refused update leaves the claim as it was.
func TestClaimStoreFullDisk(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	if err := unix.Mount("tmpfs", root, "tmpfs", 0, "size=1m,mode=0700"); err != nil {
		t.Skipf("mount tmpfs: %v (needs root)", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(root, unix.MNT_DETACH) })
	dir := filepath.Join(root, "claims")
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	minion := newMinionID()
	first := newTestClaim(minion)
	if err := st.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ListByClient(ctx, minion); err != nil { // the one-time index scan, recorded
		t.Fatal(err)
	}
	// Fill most of the file system, then create claims until it refuses one.
	if err := os.WriteFile(filepath.Join(root, "filler"), bytes.Repeat([]byte{1}, 900<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	var full error
	created := 1
	for i := 0; i < 10000 && full == nil; i++ {
		c := newTestClaim(minion)
		c.JID = "2026120100000000" + string(rune('0'+i%10)) + "000"
		if full = st.Create(ctx, c); full == nil {
			created++
		}
	}
	if !errors.Is(full, claims.ErrClaimStore) {
		t.Fatalf("Create on a full file system: %v, want claims.ErrClaimStore", full)
	}
	next := first.Clone()
	next.Phase, next.Status, next.ErrorCode, next.Evidence = claims.PhaseTerminal, receipt.StatusFailed, claims.ErrorCode("lease_busy"), "preflight"
	now := time.Now().UTC()
	next.FinishedAt = &now
	next.Total = 1
	if _, err := st.CompareAndSwap(ctx, next); err != nil && !errors.Is(err, claims.ErrClaimStore) {
		t.Fatalf("CompareAndSwap on a full file system: %v, want nil or claims.ErrClaimStore", err)
	}
	list, err := st.ListByClient(ctx, minion)
	if err != nil || len(list) != created {
		t.Fatalf("ListByClient after the disk filled: %d of %d, %v", len(list), created, err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			t.Fatalf("temporary file %s left behind", e.Name())
		}
	}
	t.Logf("%d claims fit; then: %v", created, full)
	// The same directory through a read-only bind mount (the store above keeps files open, so the
	// tmpfs itself cannot be remounted read-only): EROFS.
	ro := t.TempDir()
	if err := unix.Mount(root, ro, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(ro, unix.MNT_DETACH) })
	if err := unix.Mount("", ro, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	st, err = Open(filepath.Join(ro, "claims"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Create(ctx, newTestClaim(minion)); !errors.Is(err, claims.ErrClaimStore) {
		t.Fatalf("Create on a read-only file system: %v, want claims.ErrClaimStore", err)
	}
	cur, err := st.Get(ctx, first.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	cur2 := cur.Clone()
	cur2.ResumedAt = &now
	if _, err := st.CompareAndSwap(ctx, cur2); !errors.Is(err, claims.ErrClaimStore) {
		t.Fatalf("CompareAndSwap on a read-only file system: %v, want claims.ErrClaimStore", err)
	}
}
