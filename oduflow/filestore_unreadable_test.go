package oduflow

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/oduflow/oduflow-go/internal/safefile"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// lockedBuffer is a log sink shared by the dispatcher's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// within fails the test if op has not returned in 20 seconds (a blocking open of a FIFO never returns; a
// loaded CI machine can take several seconds for a Start and its worker).
func within(t *testing.T, what string, op func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); op() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s hangs", what)
	}
}

func TestUnreadableSiblingClaimIsNotQuarantine(t *testing.T) {
	t.Parallel()
	plant := map[string]func(t *testing.T, path string){
		"fifo": func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := unix.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"duplicate key": func(t *testing.T, path string) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			data = bytes.Replace(data, []byte(`{`), []byte(`{"status":"running",`), 1)
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, spoil := range plant {
		t.Run(name, func(t *testing.T) {
			e := startSim(t)
			m := e.addMinion()
			logs := &lockedBuffer{}
			d := e.dispatcher(WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
			ctx := context.Background()
			first := uuid.NewString()
			mustStart(t, d, receipt.ProfileConfigure, m.ID(), first)
			waitFinal(t, d, receipt.ProfileConfigure, m.ID(), first)
			// The worker removes the open entry after its final commit: let it finish before planting one.
			if err := d.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			// Damaged while unresolved, as far as the store knows: its open entry is there, so the
			// preflight, which reads the client's unresolved set, must read it. (A claim damaged after it
			// was resolved is outside that set: it can no longer block the client.)
			if err := os.WriteFile(filepath.Join(e.dir, fsOpenDir, m.ID(), first), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			spoil(t, filepath.Join(e.dir, claimName(first)))

			fs := mustFileStore(t, d)
			within(t, "ListByClient", func() {
				_, err := fs.ListByClient(ctx, m.ID())
				var uc unreadableClaim
				if !errors.Is(err, claims.ErrCorruptClaim) || !errors.As(err, &uc) || uc.UnreadableRequestID() != first {
					t.Errorf("ListByClient: %v", err)
				}
				if name == "fifo" && !errors.Is(err, safefile.ErrNotRegular) {
					t.Errorf("fifo sibling: %v", err)
				}
			})

			second := uuid.NewString()
			within(t, "Start beside an unreadable claim", func() {
				mustStart(t, d, receipt.ProfileConfigure, m.ID(), second)
				got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), second)
				if got.Status != receipt.StatusFailed {
					t.Errorf("second: %+v", got)
				}
			})
			c := mustClaim(t, d, second)
			if c.ErrorCode != claims.CodeClaimStore || c.WasDispatched() || e.runs() != 1 {
				t.Fatalf("second claim %+v, runs %d", c, e.runs())
			}
			if out := logs.String(); !strings.Contains(out, "unreadable_request_id="+first) || !strings.Contains(out, "level=WARN") {
				t.Fatalf("no warning naming %s:\n%s", first, out)
			}
		})
	}
}

func TestFIFOClientLeaseIsNotBusy(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	m := e.addMinion()
	logs := &lockedBuffer{}
	d := e.dispatcher(WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	if err := unix.Mkfifo(filepath.Join(e.dir, fsClientLeasePfx+m.ID()+".lock"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := mustFileStore(t, d)
	within(t, "AcquireClientLease", func() {
		_, err := fs.AcquireClientLease(context.Background(), m.ID(), time.Second)
		if !errors.Is(err, safefile.ErrNotRegular) || errors.Is(err, claims.ErrLeaseBusy) {
			t.Errorf("fifo lease: %v", err)
		}
	})
	req := uuid.NewString()
	within(t, "Start with a FIFO lease", func() {
		mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
		waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	})
	if c := mustClaim(t, d, req); c.ErrorCode != claims.CodeClaimStore || e.runs() != 0 {
		t.Fatalf("%+v", c)
	}
	if out := logs.String(); !strings.Contains(out, "client lease unusable") {
		t.Fatalf("no warning:\n%s", out)
	}
}
