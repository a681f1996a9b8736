package oduflow

import (
	"context"
	"encoding/json"
	"errors" // the standard library's: the readiness sentinels must be visible to it
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	crdb "github.com/cockroachdb/errors"
	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

func noClaim(t *testing.T, d *Dispatcher, req string) {
	t.Helper()
	// crdb.Is: the file store marks ErrNoClaim its own way (not this test's subject).
	if _, err := d.store.Get(context.Background(), req); !crdb.Is(err, claims.ErrNoClaim) {
		t.Fatalf("a claim was written: %v", err)
	}
}

// A missing key file: Start returns ErrNotReady (salt.ErrKeyFile) and writes nothing; once the key file
// exists, the same request id starts and runs once.
func TestStartNotReadyKeyFileWritesNothing(t *testing.T) {
	e := startSim(t)
	m := e.addMinion()
	if err := os.Remove(e.keyFile); err != nil {
		t.Fatal(err)
	}
	d := e.dispatcher()
	req := uuid.NewString()
	_, err := d.Start(context.Background(), m.ID(), req, receipt.ProfileConfigure)
	if !errors.Is(err, ErrNotReady) || !errors.Is(err, salt.ErrKeyFile) {
		t.Fatalf("missing key file: %v", err)
	}
	noClaim(t, d, req)
	if n := len(e.sim.Publications()); n != 0 {
		t.Fatalf("published %d", n)
	}
	e.syncKey()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	if got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req); got.Status != receipt.StatusSucceeded || e.runs() != 1 {
		t.Fatalf("%+v runs %d", got, e.runs())
	}
}

// A missing event socket: ErrNotReady (errEventBus), nothing written.
func TestStartNotReadyEventBusWritesNothing(t *testing.T) {
	e := startSim(t)
	m := e.addMinion()
	d, err := New(e.client, SaltEvents("unix://"+filepath.Join(t.TempDir(), "none.ipc")), WithClaimDir(e.dir),
		WithTimers(testTimers()), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close(closedContext()) })
	req := uuid.NewString()
	_, err = d.Start(context.Background(), m.ID(), req, receipt.ProfileConfigure)
	if !errors.Is(err, ErrNotReady) || !errors.Is(err, errEventBus) {
		t.Fatalf("missing event socket: %v", err)
	}
	noClaim(t, d, req)
}

// A wrong eauth password: ErrNotReady (salt.ErrAuthentication), nothing written, nothing published (the
// check is mk_token, never a publish carrying the password). With the right password, the token is
// obtained once and every later Start adds no round trip.
func TestStartNotReadyWrongPasswordAndTokenCached(t *testing.T) {
	t.Parallel()
	e := startSim(t, salttest.WithEauthUser("pam", "ops", "right", salttest.LabACL()))
	m := e.addMinion()
	tokenDispatcher := func(password string) *Dispatcher {
		base := e.newClient()
		ts := salt.NewTokenSource(base, "pam", "ops", password)
		c := e.newClient(salt.WithAuth(salt.TokenAuth(ts)))
		return e.dispatcherWith(c)
	}
	d := tokenDispatcher("wrong")
	req := uuid.NewString()
	_, err := d.Start(context.Background(), m.ID(), req, receipt.ProfileConfigure)
	if !errors.Is(err, ErrNotReady) || !errors.Is(err, salt.ErrAuthentication) {
		t.Fatalf("wrong password: %v", err)
	}
	noClaim(t, d, req)
	if n := len(e.sim.Publications()); n != 0 {
		t.Fatalf("published %d", n)
	}
	d = tokenDispatcher("right")
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	if got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req); got.Status != receipt.StatusSucceeded {
		t.Fatalf("%+v", got)
	}
	tokens, readers := e.sim.Tokens(), e.sim.EventReaders()
	for i := 0; i < 5; i++ {
		r := uuid.NewString()
		mustStart(t, d, receipt.ProfileProduction, m.ID(), r)
		waitFinal(t, d, receipt.ProfileProduction, m.ID(), r)
	}
	if e.sim.Tokens() != tokens || e.sim.EventReaders() != readers {
		t.Fatalf("tokens %d -> %d, event readers %d -> %d: the check added round trips", tokens, e.sim.Tokens(),
			readers, e.sim.EventReaders())
	}
}

// A repeated Start of an existing claim answers from the claim even when the master and the bus are down.
func TestRepeatedStartAnswersWhileMasterAndBusDown(t *testing.T) {
	e := startSim(t)
	m := e.addMinion()
	d := e.dispatcher()
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	dead, err := salt.NewClient("tcp://127.0.0.1:1", salt.WithAuth(salt.UserKey("root", filepath.Join(t.TempDir(), "none"))),
		salt.WithRequestTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dead.Close() })
	d2, err := New(dead, SaltEvents("unix://"+filepath.Join(t.TempDir(), "none.ipc")), WithClaimDir(e.dir),
		WithTimers(testTimers()), WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d2.Close(closedContext()) })
	r, err := d2.Start(context.Background(), m.ID(), req, receipt.ProfileConfigure)
	if err != nil || r.Status != receipt.StatusSucceeded {
		t.Fatalf("repeat: %+v %v", r, err)
	}
}

// A key the master rejects loads fine (so the claim is written), and the preflight failure names the
// cause: publish_authentication, not capability_unverified.
func TestPreflightFailureNamesAuthentication(t *testing.T) {
	e := startSim(t)
	m := e.addMinion()
	if err := os.WriteFile(e.keyFile, []byte(strings.Repeat("A", 75)+"="+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := e.dispatcher()
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	if got.Status != receipt.StatusFailed || e.runs() != 0 {
		t.Fatalf("%+v runs %d", got, e.runs())
	}
	if c := mustClaim(t, d, req); c.ErrorCode != claims.CodeAuthentication {
		t.Fatalf("code %q, want %q", c.ErrorCode, claims.CodeAuthentication)
	}
	// The answer itself names the reason, in Go and in JSON.
	if got.ErrorCode != claims.CodeAuthentication {
		t.Fatalf("response error_code %q, want %q", got.ErrorCode, claims.CodeAuthentication)
	}
	if b, _ := json.Marshal(got); !strings.Contains(string(b), `"error_code":"`+string(claims.CodeAuthentication)+`"`) {
		t.Fatalf("json %s", b)
	}
}
