package oduflowtest

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// The error codes of the claims the suite writes: package oduflow's CodeQuarantined, CodeNoTrustworthyReturn
// and CodeAsserted, spelled here so that the suite needs only the contract (oduflow/claims), never the
// dispatcher (TestSuiteErrorCodes holds them equal).
const (
	codeQuarantined         claims.ErrorCode = "quarantined"
	codeNoTrustworthyReturn claims.ErrorCode = "no_trustworthy_return"
	codeAsserted            claims.ErrorCode = "asserted"
)

// Store is what the conformance suite tests: a claim store together with the leases paired with it.
type Store = claims.Store

// Capabilities say what a store can and cannot do; the suite skips (and says why) what a store cannot do.
type Capabilities struct {
	// MultiProcess: handles opened in other OS processes share the backend named by a location. The suite
	// then races child processes against each other and kills a lease holder with SIGKILL.
	MultiProcess bool
	// LeaseTTL is how long a lease may outlive the death of its holder (an etcd session's TTL). Zero means
	// leases are released as soon as the holder dies (flock). A store with LeaseTTL > 0 must set
	// StoreFactory.KillSession.
	LeaseTTL time.Duration
}

// StoreFactory is how the suite gets stores. Every subtest calls New for a fresh, empty backend and Open
// for each handle it needs; two handles opened on one location are two replicas of a controller.
type StoreFactory struct {
	Capabilities Capabilities
	// New creates a fresh, empty backend and returns its location: a string from which Open reaches the
	// backend, in this process and (MultiProcess) in a child process re-executing the test binary. New
	// registers the backend's cleanup with t.
	New func(t testing.TB) (location string)
	// Open returns a new handle on the backend at location. The suite closes it when it implements
	// io.Closer.
	Open func(ctx context.Context, location string) (Store, error)
	// OpenWithWindows is Open for a store built with the given status windows (filestore.WithStatusWindows,
	// etcdstore.WithStatusWindows). Required when the store implements claims.WindowedStore: the windows
	// are given at construction, never set on a store afterwards.
	OpenWithWindows func(ctx context.Context, location string, launchGrace, statusExpiry time.Duration) (Store, error)
	// Corrupt stores data verbatim as the record of requestID (the file store writes the raw file, an etcd
	// store the raw key), bypassing every check. Nil: the malformed-record subtests are skipped.
	Corrupt func(ctx context.Context, location, requestID string, data []byte) error
	// KillSession makes s's leases lapse as if its process had hung or been partitioned away: s stops
	// renewing them without releasing anything (an etcd store stops its session's keep-alive). Required
	// when Capabilities.LeaseTTL > 0; unused otherwise.
	KillSession func(s Store)
}

// TestClaimStore runs the conformance suite of claims.Store (ClaimStore and Leases, and each optional
// capability the store implements: UnresolvedLister, UnresolvedScanner, ClaimLockReader, WindowedStore)
// against the stores f makes, one subtest per contract clause. Call it from a Test function of the store's package; with
// Capabilities.MultiProcess the suite re-executes the test binary running that same Test function, and
// TestClaimStore then plays the child's role instead of running the suite (see the package
// documentation).
func TestClaimStore(t *testing.T, f StoreFactory) {
	if job, ok := childJobFromEnv(); ok {
		if job.Test != t.Name() {
			t.Skip("oduflowtest: child process of another suite")
		}
		runChild(t, f, job)
		return
	}
	if f.New == nil || f.Open == nil {
		t.Fatal("oduflowtest: StoreFactory needs New and Open")
	}
	if f.Capabilities.LeaseTTL > 0 && f.KillSession == nil {
		t.Fatal("oduflowtest: a store with LeaseTTL needs StoreFactory.KillSession")
	}
	s := &suite{f: f, root: t.Name()}
	t.Run("Create", s.testCreate)
	t.Run("Get", s.testGet)
	t.Run("CompareAndSwap", s.testCompareAndSwap)
	t.Run("CompareAndSwapHeld", s.testCompareAndSwapHeld)
	t.Run("FenceTokens", s.testFenceTokens)
	t.Run("ListByClient", s.testListByClient)
	t.Run("ListUnresolved", s.testListUnresolved)
	t.Run("ScanUnresolved", s.testScanUnresolved)
	t.Run("ClaimLockReader", s.testClaimLockReader)
	t.Run("ChangeFeed", s.testChangeFeed)
	t.Run("WindowedStore", s.testWindowedStore)
	t.Run("Leases", s.testLeases)
	t.Run("Corrupt", s.testCorrupt)
}

type suite struct {
	f    StoreFactory
	root string // name of the Test function a child process must run
}

// opTimeout bounds every subtest's context: a store that blocks fails instead of hanging the binary.
const opTimeout = 2 * time.Minute

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	t.Cleanup(cancel)
	return ctx
}

// backend creates a fresh backend and returns its location.
func (s *suite) backend(t testing.TB) string {
	t.Helper()
	return s.f.New(t)
}

// open opens one more handle (replica) on loc.
func (s *suite) open(t testing.TB, loc string) Store {
	t.Helper()
	return s.opened(t, loc)(s.f.Open(testContext(t), loc))
}

// openWindowed opens one more handle on loc built with the status windows grace and expiry.
func (s *suite) openWindowed(t testing.TB, loc string, grace, expiry time.Duration) Store {
	t.Helper()
	return s.opened(t, loc)(s.f.OpenWithWindows(testContext(t), loc, grace, expiry))
}

// opened checks an open's outcome and closes the handle at the end of the test.
func (s *suite) opened(t testing.TB, loc string) func(Store, error) Store {
	return func(st Store, err error) Store {
		t.Helper()
		if err != nil {
			t.Fatalf("open store at %q: %v", loc, err)
		}
		if c, ok := st.(io.Closer); ok {
			t.Cleanup(func() { _ = c.Close() })
		}
		return st
	}
}

// releaseGrace is how long the suite waits for a dead holder's lease to become free: the store's TTL twice
// over plus scheduling slack on a loaded machine.
func (s *suite) releaseGrace() time.Duration {
	return 2*s.f.Capabilities.LeaseTTL + 3*time.Second
}

// NewClaim returns a valid protocol-1 claim in phase claimed for a fresh minion and request, the kind the
// dispatcher creates. The suite uses it; store authors may too.
func NewClaim() *claims.Claim {
	return &claims.Claim{
		Protocol:  1,
		MinionID:  "client-" + receipt.NewRequestID(),
		RequestID: receipt.NewRequestID(),
		Profile:   receipt.ProfileConfigure,
		Role:      "roles.client_stack",
		JID:       randomJID(),
		Phase:     claims.PhaseClaimed,
		CreatedAt: time.Now().UTC(),
	}
}

func randomJID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = '0' + b[i]%10
	}
	b[0] = '2' // a plausible year
	return string(b[:])
}

func clone(c *claims.Claim) *claims.Claim {
	data, err := c.MarshalBinary()
	if err != nil {
		panic(err)
	}
	out, err := unmarshalClaim(data)
	if err != nil {
		panic(err)
	}
	return out
}

func encode(t testing.TB, c *claims.Claim) string {
	t.Helper()
	data, err := c.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// sameClaim fails unless got is want field for field (compared in the stored encoding).
func sameClaim(t testing.TB, what string, got, want *claims.Claim) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: nil claim", what)
	}
	// The host-clock stamps are a store's own measure of the status windows (FileClaimStore writes them
	// at creation and at the intent), not the caller's data: compared without them.
	g0, w0 := *got, *want
	g0.CreatedClock, g0.DispatchedClock, w0.CreatedClock, w0.DispatchedClock = "", "", "", ""
	got, want = &g0, &w0
	if g, w := encode(t, got), encode(t, want); g != w {
		t.Fatalf("%s:\n got  %s want %s", what, g, w)
	}
}

// mustGet returns the stored claim.
func mustGet(t testing.TB, st Store, requestID string) *claims.Claim {
	t.Helper()
	c, err := st.Get(testContext(t), requestID)
	if err != nil {
		t.Fatalf("Get %s: %v", requestID, err)
	}
	return c
}

// mustCreate creates c and returns the stored claim (Generation 1).
func mustCreate(t testing.TB, st Store, c *claims.Claim) *claims.Claim {
	t.Helper()
	if err := st.Create(testContext(t), clone(c)); err != nil {
		t.Fatalf("Create: %v", err)
	}
	return mustGet(t, st, c.RequestID)
}

// unchanged fails unless the stored claim still equals before (a refused write wrote nothing).
func unchanged(t testing.TB, st Store, before *claims.Claim) {
	t.Helper()
	sameClaim(t, "record after a refused write", mustGet(t, st, before.RequestID), before)
}

// wantErr fails unless err matches target with the standard library's errors.Is.
func wantErr(t testing.TB, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got %v, want an error matching %q (standard library errors.Is)", what, err, target)
	}
}

// eventually polls cond until it holds or d has passed.
func eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
