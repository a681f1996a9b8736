package oduflow

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/internal/filestorehook"
	"github.com/oduflow/oduflow-go/internal/testproc"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// The crash points of filestore.Store.Create, in order: the index entry made (not synced), the claim's
// temporary file written, each side of the two concurrent fsyncs done while the other may not be
// ("index-synced": the index entry and clients/ synced; "temp-synced": the claim's data synced), both
// done, and the claim renamed into place before its directory fsync.
var createCrashStages = []string{"index-staged", "after-temp-write", "index-synced", "temp-synced",
	"before-link", "after-link"}

// crashChildDispatcher is a crash child's dispatcher on the file store of envClaimDir, whose stages go
// to stage, with the test simulator's address, events and keys from the environment.
func crashChildDispatcher(stage func(string)) (*Dispatcher, error) {
	fs, err := filestore.Open(os.Getenv(envClaimDir), testWindows(), filestorehook.WithStage(stage))
	if err != nil {
		return nil, err
	}
	client, err := salt.NewClient(os.Getenv(envAddr), salt.WithAuth(salt.UserKey("root", os.Getenv(envKeyFile))),
		salt.WithLogger(quietLogger()))
	if err != nil {
		return nil, err
	}
	return New(client, SaltEvents(os.Getenv(envEvents)), WithClaimStore(fs), WithTimers(testTimers()),
		WithLogger(quietLogger()), WithPKIDir(os.Getenv(envPKIDir)))
}

// runCreatorChild: one Start of (envMinion, envRequest) through a filestore.Store whose crash hook prints
// READY and parks at the stage envPauseAt (the parent SIGKILLs it there).
func runCreatorChild() int {
	stage := os.Getenv(envPauseAt)
	d, err := crashChildDispatcher(func(s string) {
		if s == stage {
			fmt.Println("READY")
			testproc.Park()
		}
	})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	_, err = d.Start(context.Background(), os.Getenv(envMinion), os.Getenv(envRequest), receipt.ProfileConfigure)
	fmt.Println("DONE", err)
	return 0
}

// A process SIGKILLed anywhere inside Create leaves either no claim (a retried Start creates it and
// dispatches once) or a claim that its client's index lists (the quarantine check sees it) and that was
// never dispatched; never a claim without its index entry.
func TestCrashDuringCreate(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, stage := range createCrashStages {
		t.Run(stage, func(t *testing.T) {
			t.Parallel()
			e := startSim(t)
			m := e.addMinion()
			req := uuid.NewString()
			h := testproc.Start(t, childEnv(e, envChild+"=creator", envMinion+"="+m.ID(), envRequest+"="+req,
				envPauseAt+"="+stage)[len(os.Environ()):]...)
			h.Expect(t, "READY")
			h.Kill(t)

			clk := newFakeClock()
			d := e.dispatcher(withClock(clk))
			fs := mustFileStore(t, d)
			ctx := context.Background()
			entry := filepath.Join(e.dir, fsIndexDir, m.ID(), req)
			if fi, err := os.Lstat(entry); err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 {
				t.Fatalf("index entry after kill at %s: %v", stage, err)
			}
			listed := func() bool {
				cs, err := fs.ListByClient(ctx, m.ID())
				if err != nil {
					t.Fatal(err)
				}
				return slices.ContainsFunc(cs, func(c *claims.Claim) bool { return c.RequestID == req })
			}
			c, err := fs.Get(ctx, req)
			if stage != "after-link" {
				if !errors.Is(err, claims.ErrNoClaim) {
					t.Fatalf("claim visible after kill at %s (before its rename): %+v, %v", stage, c, err)
				}
				if r, err := d.Status(ctx, m.ID(), req, receipt.ProfileConfigure); err != nil || r.Status != receipt.StatusNotStarted {
					t.Fatalf("status: %+v, %v", r, err)
				}
				// The retry reuses the index entry and dispatches once.
				mustStart(t, d, receipt.ProfileConfigure, m.ID(), req)
				if r := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req); r.Status != receipt.StatusSucceeded {
					t.Fatalf("retried request: %+v", r)
				}
				if !listed() || e.runs() != 1 {
					t.Fatalf("after retry: listed %v, runs %d", listed(), e.runs())
				}
				return
			}
			if err != nil || c.Phase != claims.PhaseClaimed {
				t.Fatalf("claim after kill at %s: %+v, %v", stage, c, err)
			}
			if !listed() {
				t.Fatal("a claim without its index entry: the quarantine check would miss it")
			}
			// Never dispatched: running within the launch grace, then unknown without quarantine; a repeated
			// Start publishes nothing.
			if r, err := d.Status(ctx, m.ID(), req, receipt.ProfileConfigure); err != nil || r.Status != receipt.StatusRunning {
				t.Fatalf("within grace: %+v, %v", r, err)
			}
			advanceWindows(d, clk, defaultLaunchGrace+time.Second)
			if r := mustStart(t, d, receipt.ProfileConfigure, m.ID(), req); r.Status != receipt.StatusUnknown {
				t.Fatalf("repeat after grace: %+v", r)
			}
			if c := mustClaim(t, d, req); c.Quarantining() {
				t.Fatalf("an undispatched claim quarantines: %+v", c)
			}
			e.quiesce()
			if e.runs() != 0 {
				t.Fatalf("runs %d, want 0", e.runs())
			}
		})
	}
}
