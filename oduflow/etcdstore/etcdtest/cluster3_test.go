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

// TestThreeMembers: replicas connected to different members of a 3-member cluster share claims and
// locks, with create-if-absent and the fenced CAS still exclusive.
func TestThreeMembers(t *testing.T) {
	ctx := context.Background()
	cl := startCluster(t, 3)
	var st []*etcdstore.Store
	for i := range 3 {
		st = append(st, openStores(t, []string{cl.clients[i]}, "/three", 1)...)
	}
	for round := 0; round < 5; round++ {
		base := newClaim(newMinion())
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := 0; i < 30; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := st[i%3].Create(ctx, newClaimFor(base)); err == nil {
					wins.Add(1)
				} else if !errors.Is(err, claims.ErrClaimExists) {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d winners", wins.Load())
		}
		for _, s := range st {
			if l, err := s.ListByClient(ctx, base.MinionID); err != nil || len(l) != 1 {
				t.Fatalf("list on a member: %d %v", len(l), err)
			}
		}
	}
	c := newClaim(newMinion())
	if err := st[0].Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	r, err := st[1].TryRequestLock(ctx, c.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	if held, err := st[2].RequestLockHeld(ctx, c.RequestID); err != nil || !held {
		t.Fatalf("lock not visible on another member: %v %v", held, err)
	}
	if _, err := st[2].TryRequestLock(ctx, c.RequestID); !errors.Is(err, claims.ErrLeaseBusy) {
		t.Fatalf("second lock on another member: %v", err)
	}
	l, err := st[1].AcquireClientLease(ctx, c.MinionID, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st[1].CompareAndSwapHeld(ctx, dispatchingOf(c), r, l); err != nil {
		t.Fatal(err)
	}
	if got, err := st[2].Get(ctx, c.RequestID); err != nil || got.Phase != claims.PhaseDispatching {
		t.Fatalf("intent not visible on another member: %+v %v", got, err)
	}
	_ = r.Release()
	_ = l.Release()
}

// TestLeaderStoppedMidRace: many Creates race on 3 replicas connected to all members while the leader
// is stopped. Every acknowledged Create is readable afterwards with the winner's content, no request has
// two winners, and the errors are either ErrClaimExists or typed ErrOutcomeUnknown (or a refusal that
// proves nothing was written).
func TestLeaderStoppedMidRace(t *testing.T) {
	cl := startCluster(t, 3)
	st := openStores(t, cl.clients, "/leader", 3, etcdstore.WithDialTimeout(10*time.Second))
	const requests, perRequest = 40, 6
	bases := make([]*claims.Claim, requests)
	for i := range bases {
		bases[i] = newClaim(newMinion())
	}
	type win struct{ jid string }
	var mu sync.Mutex
	winners := make(map[string][]win)
	var unknown, exists, other, issued atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	someIssued := make(chan struct{}) // closed once 30% of the creates are on their way: the leader stops then
	var someOnce sync.Once
	for i := 0; i < requests; i++ {
		for k := 0; k < perRequest; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				time.Sleep(time.Duration((i*perRequest+k)%50) * 4 * time.Millisecond) // spread over ~200 ms
				c := newClaimFor(bases[i])
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				defer cancel()
				if issued.Add(1) == requests*perRequest*3/10 {
					someOnce.Do(func() { close(someIssued) })
				}
				err := st[k%3].Create(ctx, c)
				switch {
				case err == nil:
					mu.Lock()
					winners[c.RequestID] = append(winners[c.RequestID], win{c.JID})
					mu.Unlock()
				case errors.Is(err, claims.ErrClaimExists):
					exists.Add(1)
				case errors.Is(err, etcdstore.ErrOutcomeUnknown):
					unknown.Add(1)
				default:
					other.Add(1)
					t.Logf("create error: %v", err)
				}
			}()
		}
	}
	lead := cl.leader()
	close(start)
	<-someIssued // mid-race: some creates are in flight or done, most are still to come
	cl.stop(lead)
	wg.Wait()
	t.Logf("stopped leader m%d; %d acknowledged, %d exists, %d outcome unknown, %d other",
		lead, len(winners), exists.Load(), unknown.Load(), other.Load())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, b := range bases {
		ws := winners[b.RequestID]
		if len(ws) > 1 {
			t.Fatalf("request %s has %d winners", b.RequestID, len(ws))
		}
		got, err := st[(lead+1)%3].Get(ctx, b.RequestID)
		if len(ws) == 1 {
			if err != nil || got.JID != ws[0].jid {
				t.Fatalf("acknowledged Create not readable as written: %v", err)
			}
		} else if err != nil && !errors.Is(err, claims.ErrNoClaim) {
			t.Fatalf("read after the race: %v", err)
		}
	}
	if len(winners) == 0 {
		t.Fatal("no Create succeeded: the cluster did not recover")
	}
}
