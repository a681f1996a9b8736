package etcdtest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/etcdstore"
	"github.com/oduflow/oduflow-go/receipt"
)

func TestContractSingleMember(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	c := newClaim(newMinion())
	if _, err := s.Get(ctx, c.RequestID); !errors.Is(err, claims.ErrNoClaim) {
		t.Fatalf("Get before Create: %v", err)
	}
	if err := s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	if c.Generation != 1 {
		t.Fatalf("generation after Create %d", c.Generation)
	}
	if err := s.Create(ctx, newClaimFor(c)); !errors.Is(err, claims.ErrClaimExists) {
		t.Fatalf("second Create: %v", err)
	}
	got, err := s.Get(ctx, c.RequestID)
	if err != nil || got.Generation != 1 || got.JID != c.JID || !got.CreatedAt.Equal(c.CreatedAt) {
		t.Fatalf("Get %+v %v", got, err)
	}
	next := *got
	now := time.Now().UTC()
	next.Phase, next.DispatchedAt = claims.PhaseDispatching, &now
	out, err := s.CompareAndSwap(ctx, &next)
	if err != nil || out.Generation != 2 || out.Phase != claims.PhaseDispatching {
		t.Fatalf("CAS %+v %v", out, err)
	}
	// A stale generation loses and gets the current claim.
	stale := *got
	stale.Phase = claims.PhaseTerminal
	stale.Status = receipt.StatusFailed
	cur, err := s.CompareAndSwap(ctx, &stale)
	if !errors.Is(err, claims.ErrConflict) || cur == nil || cur.Generation != 2 {
		t.Fatalf("stale CAS: %+v %v", cur, err)
	}
	// Identity fields are immutable.
	moved := *out
	moved.JID = newJID()
	if _, err := s.CompareAndSwap(ctx, &moved); !errors.Is(err, claims.ErrConflict) {
		t.Fatalf("identity change accepted: %v", err)
	}
	if got, _ := s.Get(ctx, c.RequestID); got.Generation != 2 || got.JID != c.JID {
		t.Fatalf("after refused updates: %+v", got)
	}
	if _, err := s.Get(ctx, "not-a-uuid"); !errors.Is(err, claims.ErrInvalidInput) {
		t.Fatalf("bad id: %v", err)
	}
	if _, err := s.ListByClient(ctx, "no pe"); !errors.Is(err, claims.ErrInvalidInput) {
		t.Fatalf("bad minion: %v", err)
	}
	list, err := s.ListByClient(ctx, c.MinionID)
	if err != nil || len(list) != 1 || list[0].Generation != 2 {
		t.Fatalf("list %v %v", list, err)
	}
	if list, err := s.ListByClient(ctx, newMinion()); err != nil || len(list) != 0 {
		t.Fatalf("list of another client %v %v", list, err)
	}
}

// newClaimFor is another claim for the same request (another JID, as a second dispatcher would draw).
func newClaimFor(c *claims.Claim) *claims.Claim {
	n := newClaim(c.MinionID)
	n.RequestID = c.RequestID
	return n
}

// TestCreateRace: 3 replicas x 32 goroutines create one request; exactly one wins, the stored claim is
// the winner's.
func TestCreateRace(t *testing.T) {
	ctx := context.Background()
	stores := newStores(t, 3)
	for round := 0; round < 5; round++ {
		base := newClaim(newMinion())
		var wins atomic.Int32
		var winner atomic.Value
		var wg sync.WaitGroup
		for i := 0; i < 96; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := newClaimFor(base)
				err := stores[i%3].Create(ctx, c)
				switch {
				case err == nil:
					wins.Add(1)
					winner.Store(c.JID)
				case !errors.Is(err, claims.ErrClaimExists):
					t.Errorf("Create: %v", err)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d winners", round, wins.Load())
		}
		got, err := stores[1].Get(ctx, base.RequestID)
		if err != nil || got.JID != winner.Load().(string) {
			t.Fatalf("stored claim is not the winner's: %v", err)
		}
		list, err := stores[2].ListByClient(ctx, base.MinionID)
		if err != nil || len(list) != 1 {
			t.Fatalf("index after race: %d %v", len(list), err)
		}
	}
}

// TestCASRace: goroutines on 3 replicas update one claim from the generation they read; each generation
// is won exactly once and the final generation counts the wins.
func TestCASRace(t *testing.T) {
	ctx := context.Background()
	stores := newStores(t, 3)
	c := newClaim(newMinion())
	if err := stores[0].Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	wonGen := make(map[uint64]int)
	var wins, conflicts atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 48; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := stores[i%3]
			for k := 0; k < 5; k++ {
				cur, err := st.Get(ctx, c.RequestID)
				if err != nil {
					t.Error(err)
					return
				}
				next := *cur
				next.Total++
				out, err := st.CompareAndSwap(ctx, &next)
				if err == nil {
					wins.Add(1)
					mu.Lock()
					wonGen[cur.Generation]++
					mu.Unlock()
					if out.Generation != cur.Generation+1 {
						t.Errorf("generation %d after %d", out.Generation, cur.Generation)
					}
				} else if errors.Is(err, claims.ErrConflict) {
					conflicts.Add(1)
				} else {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	for g, n := range wonGen {
		if n != 1 {
			t.Fatalf("generation %d won %d times", g, n)
		}
	}
	final, err := stores[0].Get(ctx, c.RequestID)
	if err != nil || final.Generation != uint64(wins.Load())+1 || final.Total != int(wins.Load()) {
		t.Fatalf("final %+v wins %d: %v", final, wins.Load(), err)
	}
	t.Logf("%d wins, %d conflicts", wins.Load(), conflicts.Load())
	if conflicts.Load() == 0 {
		t.Log("no conflict happened: the race was not exercised this run")
	}
}

// TestListByClientConsistent: claims of one client created one after another are always listed as a
// prefix of that sequence (never with a gap), while other clients' claims are created in between.
func TestListByClientConsistent(t *testing.T) {
	ctx := context.Background()
	stores := newStores(t, 2)
	m := newMinion()
	const n = 60
	order := make([]string, 0, n)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < n; i++ {
			c := newClaim(m)
			if err := stores[0].Create(ctx, c); err != nil {
				t.Error(err)
				return
			}
			order = append(order, c.RequestID)
			if err := stores[0].Create(ctx, newClaim(newMinion())); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var seen [][]*claims.Claim
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		list, err := stores[1].ListByClient(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, list)
	}
	if len(seen[len(seen)-1]) != n {
		t.Fatalf("final list has %d of %d", len(seen[len(seen)-1]), n)
	}
	for _, list := range seen {
		have := make(map[string]bool)
		for _, c := range list {
			if c.MinionID != m {
				t.Fatal("claim of another client listed")
			}
			have[c.RequestID] = true
		}
		for i, r := range order {
			if have[r] != (i < len(list)) {
				t.Fatalf("list of %d claims is not the first %d created (gap at %d)", len(list), len(list), i)
			}
		}
	}
	t.Logf("%d lists during the creates", len(seen))
}

// TestHostileRecords: foreign or malformed content under the prefix yields typed errors, never a panic.
func TestHostileRecords(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	cli := s.Client()
	m := newMinion()
	good := newClaim(m)
	if err := s.Create(ctx, good); err != nil {
		t.Fatal(err)
	}
	raw, err := cli.Get(ctx, s.Prefix()+"/claims/"+good.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	valid := string(raw.Kvs[0].Value)
	other := newClaim(m)
	cases := map[string]string{
		"not json":      "\x00\xffgarbage",
		"array":         "[1,2]",
		"unknown field": strings.Replace(valid, `{"protocol"`, `{"evil":1,"protocol"`, 1),
		"repeated":      strings.Replace(valid, `{"protocol":1`, `{"protocol":1,"protocol":1`, 1),
		"trailing":      strings.TrimSpace(valid) + `{"x":1}`,
		"oversized":     strings.Replace(valid, `"jid"`, `"role":"`+strings.Repeat("a", etcdstore.MaxClaimSize)+`","jid"`, 1),
		"other request": strings.Replace(valid, good.RequestID, other.RequestID, 1),
		"bad phase":     strings.Replace(valid, `"phase":"claimed"`, `"phase":"exploded"`, 1),
		"bad minion":    strings.Replace(valid, m, "root/..", 1),
		"empty":         "",
	}
	for name, v := range cases {
		req := receipt.NewRequestID()
		val := strings.ReplaceAll(v, good.RequestID, req)
		if name == "other request" {
			val = v
		}
		if _, err := cli.Put(ctx, s.Prefix()+"/claims/"+req, val); err != nil {
			t.Fatal(err)
		}
		_, err := s.Get(ctx, req)
		if !errors.Is(err, claims.ErrCorruptClaim) {
			t.Errorf("%s: Get error %v", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "aaaaaaaa") {
			t.Errorf("%s: error echoes content", name)
		}
	}
	// A CAS on a corrupt record fails typed too, and writes nothing.
	bad := newClaim(m)
	if _, err := cli.Put(ctx, s.Prefix()+"/claims/"+bad.RequestID, "{"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CompareAndSwap(ctx, bad); !errors.Is(err, claims.ErrCorruptClaim) {
		t.Fatalf("CAS over corrupt record: %v", err)
	}
	// Foreign index entries make the client's list fail typed (a list that hides a claim could lift a
	// quarantine).
	idx := s.Prefix() + "/clients/" + m + "/"
	for name, key := range map[string]string{
		"not an id":         idx + "../../etc",
		"without claim":     idx + receipt.NewRequestID(),
		"another's claim":   idx + newClaimCreated(t, s, newMinion()),
		"corrupt claim ref": idx + bad.RequestID,
	} {
		if _, err := cli.Put(ctx, key, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ListByClient(ctx, m); !errors.Is(err, claims.ErrCorruptClaim) {
			t.Errorf("%s: list error %v", name, err)
		}
		if _, err := cli.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
	}
	if list, err := s.ListByClient(ctx, m); err != nil || len(list) != 1 {
		t.Fatalf("clean list %d %v", len(list), err)
	}
}

func newClaimCreated(t *testing.T, s *etcdstore.Store, m string) string {
	c := newClaim(m)
	if err := s.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return c.RequestID
}

// TestOutcomeUnknownTyped: a Create whose context ends while the transaction is in flight (or a member
// that is gone) is ErrOutcomeUnknown for the standard library's errors.Is, not ErrClaimExists or nil.
func TestOutcomeUnknownTyped(t *testing.T) {
	c := startCluster(t, 1)
	s := openStores(t, c.clients, "/unknown", 1, etcdstore.WithDialTimeout(2*time.Second))[0]
	c.stop(0)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err := s.Create(ctx, newClaim(newMinion()))
	if !errors.Is(err, etcdstore.ErrOutcomeUnknown) || errors.Is(err, claims.ErrClaimExists) {
		t.Fatalf("Create against a stopped member: %v", err)
	}
	// A context already done before sending is not an unknown outcome: nothing was sent.
	if err := s.Create(ctx, newClaim(newMinion())); errors.Is(err, etcdstore.ErrOutcomeUnknown) {
		t.Fatalf("not sent, yet unknown: %v", err)
	}
}
