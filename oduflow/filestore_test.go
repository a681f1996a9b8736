package oduflow

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/internal/safefile"
	"github.com/oduflow/oduflow-go/receipt"
)

func TestClaimDirCreatedAndRefused(t *testing.T) {
	nn := noNetwork{t}
	dir := filepath.Join(t.TempDir(), "oduflow-apply")
	if _, err := New(nn, nn, WithClaimDir(dir), WithLogger(quietLogger())); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("mode %v %v", fi.Mode(), err)
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := New(nn, nn, WithClaimDir(dir)); !errors.Is(err, safefile.ErrUnsafePath) {
		t.Fatalf("group bits accepted: %v", err)
	}
	_ = os.Chmod(dir, 0o700)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if _, err := New(nn, nn, WithClaimDir(link)); !errors.Is(err, safefile.ErrUnsafePath) {
		t.Fatalf("symlink accepted: %v", err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, 12345, 12345); err != nil {
			t.Fatal(err)
		}
		if _, err := New(nn, nn, WithClaimDir(dir)); !errors.Is(err, safefile.ErrUnsafePath) {
			t.Fatalf("foreign owner accepted: %v", err)
		}
	}
}

func TestFileClaimStoreContract(t *testing.T) {
	ctx := context.Background()
	fs, err := OpenFileClaimStore(claimDir(t))
	if err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock()
	c := newClaim(clk, receipt.ProfileConfigure)

	// create-if-absent: exactly one of many concurrent creates wins.
	var wins, exists atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := fs.Create(ctx, c.clone())
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, ErrClaimExists):
				exists.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 || exists.Load() != 49 {
		t.Fatalf("wins %d exists %d", wins.Load(), exists.Load())
	}
	fi, err := os.Stat(filepath.Join(fs.Dir(), claimName(c.RequestID)))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("claim file mode %v %v", fi.Mode(), err)
	}
	got, err := fs.Get(ctx, c.RequestID)
	if err != nil || got.Generation != 1 || got.Phase != PhaseClaimed {
		t.Fatalf("%+v %v", got, err)
	}
	// fenced update: a stale generation loses.
	a, b := got.clone(), got.clone()
	now := clk.Now()
	a.Phase, a.DispatchedAt = PhaseDispatching, &now
	if out, err := fs.CompareAndSwap(ctx, a); err != nil || out.Generation != 2 {
		t.Fatalf("%+v %v", out, err)
	}
	b.Phase, b.Status, b.Total = PhaseTerminal, receipt.StatusFailed, 1
	if cur, err := fs.CompareAndSwap(ctx, b); !errors.Is(err, ErrConflict) || cur.Phase != PhaseDispatching {
		t.Fatalf("stale update: %+v %v", cur, err)
	}
	// identity fields are immutable.
	x, _ := fs.Get(ctx, c.RequestID)
	x.JID = "20261129120000999999"
	if _, err := fs.CompareAndSwap(ctx, x); !errors.Is(err, ErrConflict) {
		t.Fatalf("jid change: %v", err)
	}
	// list by client.
	other := newClaim(clk, receipt.ProfileProduction)
	other.Role = "roles.client_production"
	other.MinionID = c.MinionID
	if err := fs.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := fs.Create(ctx, newClaim(clk, receipt.ProfileConfigure)); err != nil {
		t.Fatal(err)
	}
	list, err := fs.ListByClient(ctx, c.MinionID)
	if err != nil || len(list) != 2 {
		t.Fatalf("list %d %v", len(list), err)
	}
	if _, err := fs.Get(ctx, uuid.NewString()); !errors.Is(err, ErrNoClaim) {
		t.Fatalf("missing: %v", err)
	}
	// nothing raw: the stored claim holds only the documented keys.
	data, _ := fs.files().Read(claimName(c.RequestID))
	for _, k := range []string{"return", "comment", "changes", "stdout", "pillar"} {
		if bytes.Contains(data, []byte(`"`+k+`"`)) {
			t.Fatalf("claim holds %s: %s", k, data)
		}
	}
}

func TestLegacyIndexedByScan(t *testing.T) {
	ctx := context.Background()
	dir := claimDir(t)
	fs, err := OpenFileClaimStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := readFixture(t, "unprofiled_dispatched.json")
	lc, _ := decodeClaim(data)
	if err := fs.files().WriteAtomic(claimName(lc.RequestID), data); err != nil {
		t.Fatal(err)
	}
	list, err := fs.ListByClient(ctx, lc.MinionID)
	if err != nil || len(list) != 1 {
		t.Fatalf("%d %v", len(list), err)
	}
	// A second store on the same directory (another process) uses the recorded index.
	fs2, _ := OpenFileClaimStore(dir)
	if list, err := fs2.ListByClient(ctx, lc.MinionID); err != nil || len(list) != 1 {
		t.Fatalf("%d %v", len(list), err)
	}
}

func TestRoleTamperingRefusedByWorker(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion()
	d := e.dispatcher(WithDetachedWorkers(noopWorker(t)))
	ctx := context.Background()
	req := uuid.NewString()
	// Create the claim without a worker (the detached "worker" does nothing), then tamper with its role.
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	c := mustClaim(t, d, req)
	c.Role = "roles.something_else"
	data, _ := encodeClaim(c)
	if err := mustFileStore(t, d).files().WriteAtomic(claimName(req), data); err != nil {
		t.Fatal(err)
	}
	if err := d.RunWorker(ctx, []string{m.ID(), req}); !errors.Is(err, errRoleNotAllowed) {
		t.Fatalf("tampered role: %v", err)
	}
	if c := mustClaim(t, d, req); c.ErrorCode != CodeRoleNotAllowed || c.Status != receipt.StatusFailed || e.runs() != 0 {
		t.Fatalf("%+v", c)
	}
	if err := d.RunWorker(ctx, []string{m.ID()}); !errors.Is(err, ErrInvalidInput) {
		t.Fatalf("args: %v", err)
	}
	if err := d.RunWorker(ctx, []string{newMinionID(), req}); !errors.Is(err, errMinionMismatch) {
		t.Fatalf("other minion: %v", err)
	}
}

type recHooks struct {
	mu         sync.Mutex
	started    int
	pubs       map[string]int
	outcomes   map[receipt.Status]int
	observed   map[string]int
	unverified map[string]int
}

// hooks is h as the dispatcher's Hooks.
func (h *recHooks) hooks() Hooks {
	return Hooks{Started: h.Started, Published: h.Published, Outcome: h.Outcome, Observe: h.Observe,
		UnverifiedEvent: h.UnverifiedEvent}
}

func (h *recHooks) Started(context.Context, RequestRef, bool) {
	h.mu.Lock()
	h.started++
	h.mu.Unlock()
}
func (h *recHooks) Published(_ context.Context, _ RequestRef, fun, res string) {
	h.mu.Lock()
	h.pubs[fun+"/"+res]++
	h.mu.Unlock()
}
func (h *recHooks) Outcome(_ context.Context, _ RequestRef, st receipt.Status, _ string) {
	h.mu.Lock()
	h.outcomes[st]++
	h.mu.Unlock()
}
func (h *recHooks) Observe(_ context.Context, _ RequestRef, op string, _ time.Duration) {
	h.mu.Lock()
	h.observed[op]++
	h.mu.Unlock()
}
func (h *recHooks) UnverifiedEvent(_ context.Context, _ RequestRef, reason string) {
	h.mu.Lock()
	if h.unverified == nil {
		h.unverified = map[string]int{}
	}
	h.unverified[reason]++
	h.mu.Unlock()
}

func TestHooksAndLogAttributes(t *testing.T) {
	e := startSim(t)
	m := e.addMinion()
	var buf syncBuffer
	h := &recHooks{pubs: map[string]int{}, outcomes: map[receipt.Status]int{}, observed: map[string]int{}}
	d := e.dispatcher(WithHooks(h.hooks()), WithLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
	waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	_ = d.Close(closedContext())
	h.mu.Lock()
	if h.started != 1 || h.pubs[funRun+"/ok"] != 1 || h.pubs[funCapabilities+"/ok"] != 1 ||
		h.outcomes[receipt.StatusSucceeded] != 1 || h.observed["start"] != 1 || h.observed["dispatch_to_final"] != 1 {
		t.Fatalf("hooks: %+v", h)
	}
	h.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) < 3 {
		t.Fatalf("log: %q", lines)
	}
	for _, l := range lines {
		for _, k := range []string{`"request_id":"` + req + `"`, `"minion_id":"` + m.ID() + `"`, `"jid":"`, `"profile":"configure"`} {
			if !strings.Contains(l, k) {
				t.Fatalf("log line without %s: %s", k, l)
			}
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
