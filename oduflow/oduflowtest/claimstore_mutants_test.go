package oduflowtest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	crdb "github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest"
)

// A suite that cannot fail proves nothing: each mutant breaks one clause of the contract, and the suite,
// run against it in a child process, must fail in the subtest of that clause.

const mutantEnv = "ODUFLOWTEST_MUTANT"

var mutants = map[string]string{ // mutant -> subtest that must catch it
	"create overwrites":        "Create/if_absent",
	"cas ignores generation":   "CompareAndSwap/stale_generation",
	"identity mutable":         "CompareAndSwap/identity_immutable",
	"held ignores leases":      "CompareAndSwapHeld/after_Release_of_the_request_lock",
	"list hides corrupt":       "Corrupt/listed_corrupt_claim",
	"cockroach-only sentinels": "Get/no_claim",
	"lock not exclusive":       "Leases/request_lock_exclusive",
	"session never expires":    "CompareAndSwapHeld/after_session_death",
	"fence token repeats":      "FenceTokens/recorded_and_kept",
	"fence floor ignored":      "FenceTokens/above_the_caller's_floor",
}

func TestSuiteCatchesBrokenStores(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for name, subtest := range mutants {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenStoreConformance$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), mutantEnv+"="+name)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("suite passed against the mutant %q (err %v):\n%s", name, err, out)
			}
			if want := "--- FAIL: TestBrokenStoreConformance/" + subtest + " "; !strings.Contains(string(out), want) {
				t.Fatalf("mutant %q not caught by %s:\n%s", name, subtest, out)
			}
		})
	}
}

// TestBrokenStoreConformance runs the suite against one mutant; it only runs in TestSuiteCatchesBrokenStores'
// child processes.
func TestBrokenStoreConformance(t *testing.T) {
	name := os.Getenv(mutantEnv)
	if name == "" {
		t.Skip("runs as a child of TestSuiteCatchesBrokenStores")
	}
	f := memoryFactory()
	if name == "session never expires" {
		f.Capabilities.LeaseTTL = 100 * time.Millisecond
		f.KillSession = func(oduflowtest.Store) {}
	}
	open := f.Open
	f.Open = func(ctx context.Context, loc string) (oduflowtest.Store, error) {
		st, err := open(ctx, loc)
		return mutant{Store: st, name: name}, err
	}
	oduflowtest.TestClaimStore(t, f)
}

type mutant struct {
	oduflowtest.Store
	name string
}

func (m mutant) Create(ctx context.Context, c *claims.Claim) error {
	err := m.Store.Create(ctx, c)
	if m.name == "create overwrites" && errors.Is(err, claims.ErrClaimExists) {
		cur, gerr := m.Store.Get(ctx, c.RequestID)
		if gerr != nil {
			return gerr
		}
		next := *c
		next.Generation = cur.Generation
		next.MinionID, next.JID = cur.MinionID, cur.JID // keep the identity so the write goes through
		_, err = m.Store.CompareAndSwap(ctx, &next)
	}
	return err
}

func (m mutant) Get(ctx context.Context, requestID string) (*claims.Claim, error) {
	c, err := m.Store.Get(ctx, requestID)
	if m.name == "cockroach-only sentinels" && errors.Is(err, claims.ErrNoClaim) {
		return nil, crdb.Mark(crdb.New("no such claim"), claims.ErrNoClaim)
	}
	return c, err
}

func (m mutant) CompareAndSwap(ctx context.Context, next *claims.Claim) (*claims.Claim, error) {
	switch m.name {
	case "cas ignores generation", "identity mutable":
		cur, err := m.Store.Get(ctx, next.RequestID)
		if err != nil {
			return nil, err
		}
		n := *next
		n.Generation = cur.Generation
		if m.name == "identity mutable" { // a blind overwrite, identity and all
			n.Generation++
			data, err := n.MarshalBinary()
			if err != nil {
				return nil, err
			}
			m.Store.(*oduflowtest.MemoryStore).Corrupt(next.RequestID, data)
			return &n, nil
		}
		return m.Store.CompareAndSwap(ctx, &n)
	}
	return m.Store.CompareAndSwap(ctx, next)
}

func (m mutant) CompareAndSwapHeld(ctx context.Context, next *claims.Claim, held ...claims.Lease) (*claims.Claim, error) {
	if m.name == "held ignores leases" {
		return m.Store.CompareAndSwap(ctx, next)
	}
	if m.name == "fence floor ignored" {
		n := *next
		n.FenceToken = 0
		next = &n
	}
	out, err := m.Store.CompareAndSwapHeld(ctx, next, held...)
	if m.name == "fence token repeats" && err == nil && out.FenceToken > 1 {
		out.FenceToken = 1 // every intent gets the same token
		data, merr := out.MarshalBinary()
		if merr != nil {
			return nil, merr
		}
		m.Store.(*oduflowtest.MemoryStore).Corrupt(out.RequestID, data)
	}
	return out, err
}

func (m mutant) ListByClient(ctx context.Context, minionID string) ([]*claims.Claim, error) {
	list, err := m.Store.ListByClient(ctx, minionID)
	if m.name == "list hides corrupt" && errors.Is(err, claims.ErrCorruptClaim) {
		return nil, nil
	}
	return list, err
}

type freeLease struct{}

func (freeLease) Release() error { return nil }
func (freeLease) Held() bool     { return true }

func (m mutant) TryRequestLock(ctx context.Context, requestID string) (claims.Lease, error) {
	l, err := m.Store.TryRequestLock(ctx, requestID)
	if m.name == "lock not exclusive" && errors.Is(err, claims.ErrLeaseBusy) {
		return freeLease{}, nil
	}
	return l, err
}
