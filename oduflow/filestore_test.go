package oduflow

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/internal/safefile"
	"github.com/oduflow/oduflow-go/oduflow/claims"
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
	if err := claimFiles(t, mustFileStore(t, d)).WriteAtomic(claimName(req), data); err != nil {
		t.Fatal(err)
	}
	if err := d.runDetachedWorker(ctx, []string{m.ID(), req}); !errors.Is(err, errRoleNotAllowed) {
		t.Fatalf("tampered role: %v", err)
	}
	if c := mustClaim(t, d, req); c.ErrorCode != claims.CodeRoleNotAllowed || c.Status != receipt.StatusFailed || e.runs() != 0 {
		t.Fatalf("%+v", c)
	}
	if err := d.runDetachedWorker(ctx, []string{m.ID()}); !errors.Is(err, claims.ErrInvalidInput) {
		t.Fatalf("args: %v", err)
	}
	if err := d.runDetachedWorker(ctx, []string{newMinionID(), req}); !errors.Is(err, errMinionMismatch) {
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
