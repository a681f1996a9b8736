package etcdtest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/etcdstore"
)

const shortTTL = 2 * time.Second

func dispatchingOf(c *claims.Claim) *claims.Claim {
	n := *c
	now := time.Now().UTC()
	n.Phase, n.DispatchedAt = claims.PhaseDispatching, &now
	return &n
}

// TestLeaseExclusivity: two Stores (two replicas) never hold the same lock at once.
func TestLeaseExclusivity(t *testing.T) {
	ctx := context.Background()
	st := newStores(t, 2)
	a, b := st[0], st[1]
	req, m := newClaim(newMinion()).RequestID, newMinion()

	la, err := a.TryRequestLock(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryRequestLock(ctx, req); !errors.Is(err, claims.ErrLeaseBusy) {
		t.Fatalf("second request lock: %v", err)
	}
	if _, err := a.TryRequestLock(ctx, req); !errors.Is(err, claims.ErrLeaseBusy) {
		t.Fatalf("request lock is not reentrant within one store either: %v", err)
	}
	for _, s := range st {
		if held, err := s.RequestLockHeld(ctx, req); err != nil || !held {
			t.Fatalf("RequestLockHeld %v %v", held, err)
		}
	}
	if err := la.Release(); err != nil || la.Held() {
		t.Fatalf("release: %v held=%v", err, la.Held())
	}
	if err := la.Release(); err != nil {
		t.Fatalf("second release: %v", err)
	}
	if held, _ := b.RequestLockHeld(ctx, req); held {
		t.Fatal("lock held after release")
	}
	lb, err := b.TryRequestLock(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Release()

	ca, err := a.AcquireClientLease(ctx, m, 0)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := b.AcquireClientLease(ctx, m, 300*time.Millisecond); !errors.Is(err, claims.ErrLeaseBusy) {
		t.Fatalf("busy client lease: %v", err)
	}
	if d := time.Since(t0); d < 300*time.Millisecond || d > 3*time.Second {
		t.Fatalf("busy wait took %v", d)
	}
	// a holder that keeps its lease 300 ms: the waiter must be woken by its release
	go func() { time.Sleep(300 * time.Millisecond); _ = ca.Release() }()
	t0 = time.Now()
	cb, err := b.AcquireClientLease(ctx, m, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Fatalf("waiter woke %v after the release", d)
	}
	if ca.Held() || !cb.Held() {
		t.Fatal("Held after hand-over")
	}
	_ = cb.Release()

	// Many goroutines on both stores: at most one holder at a time.
	var holders, maxHolders, got atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := st[i%2].AcquireClientLease(ctx, m, 20*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			got.Add(1)
			if n := holders.Add(1); n > maxHolders.Load() {
				maxHolders.Store(n)
			}
			// the lease is held a moment, so holders overlap if exclusion fails
			time.Sleep(5 * time.Millisecond)
			holders.Add(-1)
			_ = l.Release()
		}()
	}
	wg.Wait()
	if maxHolders.Load() != 1 || got.Load() != 20 {
		t.Fatalf("max %d holders, %d acquisitions", maxHolders.Load(), got.Load())
	}
}

// TestHeldGuard: CompareAndSwapHeld writes only while every named lock is still this holder's.
func TestHeldGuard(t *testing.T) {
	ctx := context.Background()
	st := newStores(t, 2, etcdstore.WithTTL(shortTTL))
	a, b := st[0], st[1]
	c := newClaim(newMinion())
	if err := a.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	take := func(s *etcdstore.Store) (*etcdstore.Lease, *etcdstore.Lease) {
		t.Helper()
		r, err := s.TryRequestLock(ctx, c.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		l, err := s.AcquireClientLease(ctx, c.MinionID, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return r.(*etcdstore.Lease), l.(*etcdstore.Lease)
	}
	unchanged := func(why string) {
		t.Helper()
		cur, err := b.Get(ctx, c.RequestID)
		if err != nil || cur.Generation != 1 || cur.Phase != claims.PhaseClaimed {
			t.Fatalf("%s: claim changed: %+v %v", why, cur, err)
		}
	}

	// 1. The lock key deleted behind the holder's back: locally still "held", the transaction refuses.
	r, l := take(a)
	if _, err := b.Client().Delete(ctx, r.Key()); err != nil {
		t.Fatal(err)
	}
	if !r.Held() {
		t.Fatal("deleting the key must not be visible locally (the transaction is the authority)")
	}
	if _, err := a.CompareAndSwapHeld(ctx, dispatchingOf(c), r, l); !errors.Is(err, claims.ErrLeaseLost) {
		t.Fatalf("deleted lock: %v", err)
	}
	unchanged("deleted lock")
	// ... and taken over by the other replica meanwhile.
	r2, err := b.TryRequestLock(ctx, c.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.CompareAndSwapHeld(ctx, dispatchingOf(c), r, l); !errors.Is(err, claims.ErrLeaseLost) {
		t.Fatalf("taken-over lock: %v", err)
	}
	unchanged("taken-over lock")
	// A lease of another store is foreign.
	if _, err := a.CompareAndSwapHeld(ctx, dispatchingOf(c), r2, l); !errors.Is(err, claims.ErrLeaseLost) {
		t.Fatalf("foreign lease: %v", err)
	}
	if _, err := a.CompareAndSwapHeld(ctx, dispatchingOf(c), fakeLease{}); !errors.Is(err, claims.ErrLeaseLost) {
		t.Fatalf("fake lease: %v", err)
	}
	unchanged("foreign lease")
	_ = r.Release()
	_ = l.Release()
	_ = r2.Release()
	if _, err := a.CompareAndSwapHeld(ctx, dispatchingOf(c), r); !errors.Is(err, claims.ErrLeaseLost) {
		t.Fatalf("released lease: %v", err)
	}

	// 2. The session revoked by another client (what expiry does on the server): refused at once, and
	// Held turns false within the TTL.
	r, l = take(a)
	if _, err := b.Client().Revoke(ctx, l.LeaseID()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CompareAndSwapHeld(ctx, dispatchingOf(c), r, l); !errors.Is(err, claims.ErrLeaseLost) {
		t.Fatalf("revoked lease: %v", err)
	}
	unchanged("revoked lease")
	select {
	case <-l.Done():
	case <-time.After(shortTTL + 2*time.Second):
		t.Fatal("session still alive after its lease was revoked")
	}
	if l.Held() || !r.Held() {
		t.Fatalf("Held: client %v request %v", l.Held(), r.Held())
	}
	_ = l.Release()

	// 3. Both held: the intent is recorded with Generation+1.
	l2, err := a.AcquireClientLease(ctx, c.MinionID, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	out, err := a.CompareAndSwapHeld(ctx, dispatchingOf(c), r, l2)
	if err != nil || out.Generation != 2 || out.Phase != claims.PhaseDispatching {
		t.Fatalf("guarded CAS: %+v %v", out, err)
	}
	// A stale generation with held leases is a conflict, not a lost lease.
	if _, err := a.CompareAndSwapHeld(ctx, dispatchingOf(c), r, l2); !errors.Is(err, claims.ErrConflict) {
		t.Fatalf("stale guarded CAS: %v", err)
	}
	_ = r.Release()
	_ = l2.Release()
}

type fakeLease struct{}

func (fakeLease) Release() error { return nil }
func (fakeLease) Held() bool     { return true }

// TestHeldAfterPartition: a replica cut off from the cluster longer than the TTL loses its locks on the
// server; another replica takes them; when the first comes back its guarded CAS writes nothing.
func TestHeldAfterPartition(t *testing.T) {
	ctx := context.Background()
	cl := startCluster(t, 1)
	px := newProxy(t, cl.clients[0])
	a := openStores(t, []string{px.addr()}, "/partition", 1, etcdstore.WithTTL(shortTTL))[0]
	b := openStores(t, cl.clients, "/partition", 1, etcdstore.WithTTL(shortTTL))[0]
	c := newClaim(newMinion())
	if err := a.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	r, err := a.TryRequestLock(ctx, c.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	l, err := a.AcquireClientLease(ctx, c.MinionID, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	px.setCut(true)
	t0 := time.Now()
	lb, err := b.AcquireClientLease(ctx, c.MinionID, 4*shortTTL)
	if err != nil {
		t.Fatalf("client lease not freed by the partitioned holder's expiry: %v", err)
	}
	t.Logf("client lease taken over %v after the cut", time.Since(t0).Round(time.Millisecond))
	if held, err := b.RequestLockHeld(ctx, c.RequestID); err != nil || held {
		t.Fatalf("request lock still held after expiry: %v %v", held, err)
	}
	px.setCut(false)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// The cut reset a's connection: until its client has reconnected, the CAS's read fails as a store
	// failure (ErrClaimStore: nothing written) and is tried again; once the store answers, the CAS must
	// find the locks gone.
	for {
		_, err := a.CompareAndSwapHeld(cctx, dispatchingOf(c), r, l)
		if errors.Is(err, claims.ErrLeaseLost) {
			break
		}
		if !errors.Is(err, claims.ErrClaimStore) || cctx.Err() != nil {
			t.Fatalf("guarded CAS after the partition: %v", err)
		}
		t.Logf("guarded CAS while a reconnects: %v", err)
		// a retry backoff while the client reconnects (what a caller does)
		time.Sleep(200 * time.Millisecond)
	}
	cur, err := b.Get(ctx, c.RequestID)
	if err != nil || cur.Phase != claims.PhaseClaimed || cur.Generation != 1 {
		t.Fatalf("claim changed: %+v %v", cur, err)
	}
	_ = lb.Release()
}

// TestReleaseOnHolderDeath: a holder that stops (keepalives end without a release) frees its locks within
// the TTL; RequestLockHeld follows.
func TestReleaseOnHolderDeath(t *testing.T) {
	ctx := context.Background()
	st := newStores(t, 2, etcdstore.WithTTL(shortTTL))
	a, b := st[0], st[1]
	req, m := newClaim(newMinion()).RequestID, newMinion()
	if _, err := a.TryRequestLock(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AcquireClientLease(ctx, m, 0); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil { // the holder dies: no Release
		t.Fatal(err)
	}
	t0 := time.Now()
	if held, _ := b.RequestLockHeld(ctx, req); !held {
		t.Fatal("request lock vanished before the TTL")
	}
	l, err := b.AcquireClientLease(ctx, m, 4*shortTTL)
	if err != nil {
		t.Fatalf("client lease of a dead holder: %v", err)
	}
	d := time.Since(t0)
	if d > shortTTL+2*time.Second {
		t.Fatalf("freed after %v, TTL %v", d, shortTTL)
	}
	if held, err := b.RequestLockHeld(ctx, req); err != nil || held {
		t.Fatalf("request lock of a dead holder: %v %v", held, err)
	}
	t.Logf("freed %v after the holder died (TTL %v)", d.Round(time.Millisecond), shortTTL)
	_ = l.Release()
}

// TestIntentRace: 3 replicas x 100 goroutines race the worker's sequence (create, request lock, client
// lease, guarded intent) for one request: exactly one records the intent.
func TestIntentRace(t *testing.T) {
	ctx := context.Background()
	st := newStores(t, 3)
	base := newClaim(newMinion())
	var intents, lockBusy, leaseBusy, lost, conflict, past atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 300; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := st[i%3]
			<-start
			if err := s.Create(ctx, newClaimFor(base)); err != nil && !errors.Is(err, claims.ErrClaimExists) {
				t.Error(err)
				return
			}
			// Odd goroutines read the claim before locking (a stale view the fence must catch), even ones
			// after, as the worker does. Each retries the request lock for a while, so that many get it
			// one after another.
			stale, err := s.Get(ctx, base.RequestID)
			if err != nil {
				t.Error(err)
				return
			}
			var r claims.Lease
			for try := 0; ; try++ {
				if r, err = s.TryRequestLock(ctx, base.RequestID); err == nil {
					break
				}
				if !errors.Is(err, claims.ErrLeaseBusy) {
					t.Error(err)
					return
				}
				if try == 8 {
					lockBusy.Add(1)
					return
				}
				// a retry backoff, jittered per contender
				time.Sleep(time.Duration(5+i%7) * time.Millisecond)
			}
			defer r.Release()
			c := stale
			if i%2 == 0 {
				if c, err = s.Get(ctx, base.RequestID); err != nil {
					t.Error(err)
					return
				}
			}
			if c.Phase != claims.PhaseClaimed {
				past.Add(1)
				return // past claimed: never dispatched twice
			}
			l, err := s.AcquireClientLease(ctx, c.MinionID, 200*time.Millisecond)
			if err != nil {
				if !errors.Is(err, claims.ErrLeaseBusy) {
					t.Error(err)
				}
				leaseBusy.Add(1)
				return
			}
			defer l.Release()
			_, err = s.CompareAndSwapHeld(ctx, dispatchingOf(c), r, l)
			switch {
			case err == nil:
				intents.Add(1)
			case errors.Is(err, claims.ErrConflict):
				conflict.Add(1)
			case errors.Is(err, claims.ErrLeaseLost):
				lost.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	t.Logf("intents %d, saw past claimed %d, request lock busy %d, client lease busy %d, fenced conflicts %d, lost %d",
		intents.Load(), past.Load(), lockBusy.Load(), leaseBusy.Load(), conflict.Load(), lost.Load())
	if intents.Load() != 1 {
		t.Fatalf("%d intents recorded", intents.Load())
	}
	c, err := st[2].Get(ctx, base.RequestID)
	if err != nil || c.Phase != claims.PhaseDispatching || c.Generation != 2 {
		t.Fatalf("final %+v %v", c, err)
	}
}
