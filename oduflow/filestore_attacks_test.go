package oduflow

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/oduflow/oduflow-go/internal/filestorehook"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
)

// The file store's attacks of issue 17 ("File store"): each test failed on the code before the fix.

const poolFile = ".locks" // the safe file store's lock pool file in the claim directory

// TestPoolUnusableFailsStart: the lock pool file replaced by something no pool can use (a FIFO). Before
// the fix Start answered running with a nil error and left a claim no worker could ever lock (claimed
// for ever, Status running then unknown, an untyped error). Now Start fails with ErrClaimStore before
// writing anything.
func TestPoolUnusableFailsStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := startSim(t)
	m := e.addMinion()
	d := e.dispatcher()
	first := receipt.NewRequestID()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), first)
	waitFinal(t, d, receipt.ProfileConfigure, m.ID(), first) // the pool is open
	p := filepath.Join(e.dir, poolFile)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	req := receipt.NewRequestID()
	r, err := d.Start(ctx, m.ID(), req, receipt.ProfileConfigure)
	if !errors.Is(err, claims.ErrClaimStore) {
		t.Fatalf("Start with an unusable lock pool: %+v %v, want ErrClaimStore", r, err)
	}
	if _, err := d.store.Get(ctx, req); !errors.Is(err, claims.ErrNoClaim) {
		t.Fatalf("claim after the refused Start: %v, want none", err)
	}
	if _, err := d.Status(ctx, m.ID(), req, receipt.ProfileConfigure); err != nil {
		t.Fatalf("Status of the refused request: %v", err)
	}
}

// TestWorkerLockFailureEndsClaim: the worker cannot take its request lock (the lock file of the request
// was replaced by a FIFO right after the claim was created). Before the fix the worker only logged it:
// the claim stayed claimed, read running for the launch grace and unknown after it. Now it is committed
// failed (claim_store_unreadable, nothing published) at once.
func TestWorkerLockFailureEndsClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := startSim(t)
	m := e.addMinion()
	var plant atomic.Value // request id whose lock file is planted once its claim exists
	st, err := filestore.Open(e.dir, testWindows(), filestorehook.WithStage(func(stage string) {
		if req, _ := plant.Load().(string); req != "" && stage == "after-link" {
			_ = unix.Mkfifo(filepath.Join(e.dir, fsRequestLockPfx+req+".lock"), 0o600)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	d := e.dispatcher(WithClaimStore(st))
	req := receipt.NewRequestID()
	plant.Store(req)
	if _, err := d.Start(ctx, m.ID(), req, receipt.ProfileConfigure); err != nil {
		t.Fatal(err)
	}
	var c *claims.Claim
	if !waitUntil(5*time.Second, func() bool {
		got, err := st.Get(ctx, req)
		c = got
		return err == nil && got.Phase.Final()
	}) {
		t.Fatalf("claim not final 5 s after its worker could not lock it: %+v", c)
	}
	if c.Status != receipt.StatusFailed || c.ErrorCode != claims.CodeClaimStore || c.WasDispatched() {
		t.Fatalf("claim after the worker's lock failed: %+v", c)
	}
	if n := e.runs(); n != 0 {
		t.Fatalf("%d publications", n)
	}
}

// TestFinalCommitComparesJID: while a worker waits for its run's return, the claim of its request id is
// re-created under another JID (a store edited, or restored from an earlier copy). Before the fix the
// worker's final commit (finalize) compared only the generation it re-read, and committed its old
// run's success onto the re-created claim: another run's record said succeeded. Now every final commit
// compares the claim's identity, JID included, and leaves the re-created claim alone.
func TestFinalCommitComparesJID(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion(fakeminion.WithHold())
	committed, replied := make(chan struct{}, 1), make(chan struct{}, 1)
	d := e.dispatcher(WithHooks(Hooks{Step: func(_ context.Context, _ RequestRef, s string) {
		switch s {
		case stepCommitted:
			committed <- struct{}{}
		case stepPublishReplied:
			replied <- struct{}{}
		}
	}}))
	req := receipt.NewRequestID()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	// Wait for the worker's dispatched commit too: the test writes the claim file without the record
	// lock, so a write racing that commit (under the lock, between its read and its rename) is lost to
	// it, and the test would prove nothing about the final commit.
	select {
	case <-replied:
	case <-time.After(10 * time.Second):
		t.Fatal("never published")
	}
	if !waitUntil(10*time.Second, func() bool { return m.Runs() > 0 }) {
		t.Fatal("the minion never started the run")
	}
	st := mustFileStore(t, d)
	recreated := mustClaim(t, d, req).Clone()
	recreated.JID = string(d.jids.Next())
	recreated.Phase, recreated.DispatchedAt, recreated.MinionKeySHA256, recreated.Generation = claims.PhaseClaimed, nil, "", 1
	recreated.FenceToken, recreated.DispatchedClock = 0, "" // never dispatched: no fencing token, no dispatch clock
	data, err := encodeClaim(recreated)
	if err != nil {
		t.Fatal(err)
	}
	if err := claimFiles(t, st).WriteAtomic(claimName(req), data); err != nil {
		t.Fatal(err)
	}
	m.Release()
	select {
	case <-committed:
	case <-time.After(20 * time.Second):
		t.Fatal("the worker never reached its final commit")
	}
	got := mustClaim(t, d, req)
	if got.JID != recreated.JID || got.Phase != claims.PhaseClaimed || got.Status != "" {
		t.Fatalf("re-created claim after the old run's final commit: %+v", got)
	}
}
