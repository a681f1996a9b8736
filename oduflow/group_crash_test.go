package oduflow

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/google/uuid"
	"golang.org/x/sys/unix"

	"github.com/oduflow/oduflow-go/internal/testproc"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// The file store's writes share their fsyncs: a directory fsync is one round for every writer of that
// directory that arrived before it started (safefile's dirSyncer: a leader fsyncs, the others queue for
// the next round), and the data and index fsyncs of concurrent writers run together so the file system
// commits them together (one journal commit on ext4 with a journal). These tests SIGKILL a process in the
// middle of such a group: 16 concurrent Starts (new clients and a second request of known ones) whose
// workers write their dispatch intents and terminal commits meanwhile, killed at the k-th time any of
// them reaches a step, so that the others are at every other point of the same group.
//
// A SIGKILL loses no page cache, so what these tests prove is the order of the group's steps, the part
// of durability a test can observe: a claim's name never exists before its index entries, a Start is
// acknowledged only after its claim's rename (and the directory fsync that follows it) returned, a dispatch
// intent is written before its publication. That the fsyncs themselves reach the disk is the kernel's part.

// groupCrashPoints: every step a group member passes (safefile's and filestore's stage names, in the
// order one Create, one intent or one terminal write passes them) and the occurrence the child dies at:
// the 4th, early enough that most members are still inside the group and late enough that some are past
// it; the first member to queue for a directory fsync (a group has just formed); for the rename of a
// claim's rewrite the 18th as well, past the 16 dispatch intents, among the terminal commits; and the
// steps of the store's group commit (safefile.SyncGroup): a writer's own fsync, queued behind a sync in
// flight, a queued sync that found one caller, a file-system sync of several.
var groupCrashPoints = []struct {
	stage string
	at    int
}{{"index-staged", 4}, {"empty-created", 4}, {"after-temp-write", 4}, {"index-synced", 4}, {"temp-synced", 4},
	{"before-link", 4}, {"after-link", 4}, {"dir-sync-queued", 1}, {"dir-fsync", 4}, {"before-rename", 4},
	{"after-rename", 4}, {"before-rename", 18}, {"after-rename", 18},
	{"own-sync", 4}, {"sync-queued", 1}, {"sync-queued", 4}, {"lone-sync", 1}, {"fs-sync", 1}}

const (
	envGroup      = "ODUFLOW_TEST_GROUP"       // minion:request,... started concurrently by the group child
	envPauseCount = "ODUFLOW_TEST_PAUSE_COUNT" // the group child parks at this occurrence of envPauseAt
)

// runGroupChild: the Starts of envGroup, all at once, through one dispatcher whose file store counts the
// stages every member passes; the envPauseCount-th time any member reaches envPauseAt, the process prints
// KILL and SIGKILLs itself there, wherever the other members are. A Start that returned prints "ACK
// <request>" first. When the stage was reached fewer times, it prints "MISSED <count>" once every request is
// final.
//
// A group forms only when a writer arrives while another one's sync runs, which a fast file system
// (tmpfs) rarely shows: for the queued steps and the file-system sync the syncs' leaders wait for members
// to queue behind them (queueHold).
func runGroupChild() int {
	stage := os.Getenv(envPauseAt)
	at, err := strconv.Atoi(os.Getenv(envPauseCount))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	var seen atomic.Int64
	hold := newQueueHold(stage, at)
	d, err := crashChildDispatcher(func(s string) {
		hold.step(s)
		if s == stage && seen.Add(1) == int64(at) {
			fmt.Println("KILL")
			_ = unix.Kill(os.Getpid(), unix.SIGKILL)
			testproc.Park() // the signal is on its way
		}
	})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	var out sync.Mutex // one whole line at a time on stdout
	var wg sync.WaitGroup
	for _, pair := range strings.Split(os.Getenv(envGroup), ",") {
		minion, request, _ := strings.Cut(pair, ":")
		wg.Go(func() {
			if _, err := d.Start(context.Background(), minion, request, receipt.ProfileConfigure); err == nil {
				out.Lock()
				fmt.Println("ACK", request)
				out.Unlock()
			}
		})
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = d.Wait(ctx)
	fmt.Println("MISSED", seen.Load())
	return 0
}

// groupMember is one Start of the group: a minion and a request.
type groupMember struct{ minion, request string }

// TestCrashDuringGroupCommit: a process SIGKILLed at any step of a group of concurrent durable writes
// (claims, dispatch intents, terminal commits sharing directory fsyncs) loses no acknowledged claim, leaves
// no claim its client's index misses, has published nothing whose claim lacks its dispatch intent, and
// its requests, started again, are each published at most once in all. On the test's temporary file system
// (ext4 on the developers' machines and in CI) and on tmpfs (/dev/shm).
func TestCrashDuringGroupCommit(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, where := range []string{"tmpdir", "tmpfs"} {
		for _, p := range groupCrashPoints {
			t.Run(fmt.Sprintf("%s/%s#%d", where, p.stage, p.at), func(t *testing.T) {
				t.Parallel()
				e := startSim(t)
				e.dir = groupCrashDir(t, where)
				checkGroupCrash(t, e, p.stage, p.at)
			})
		}
	}
}

// groupCrashDir is a claim directory on the named file system: the test's temporary directory's (logged
// with its type) or tmpfs; it skips when /dev/shm is not a tmpfs it may write.
func groupCrashDir(t *testing.T, where string) string {
	if where == "tmpdir" {
		dir := claimDir(t)
		t.Logf("claim directory on %s", fsTypeName(t, os.TempDir()))
		return dir
	}
	var st unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		t.Skipf("no tmpfs at /dev/shm (%v): the tmpfs half of the group crash test cannot run here", err)
	}
	base, err := os.MkdirTemp("/dev/shm", "oduflow-group-")
	if err != nil {
		t.Skipf("/dev/shm is not writable here: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	return base + "/claims"
}

func fsTypeName(t *testing.T, dir string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	switch st.Type {
	case unix.EXT4_SUPER_MAGIC:
		return "ext4"
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	}
	return fmt.Sprintf("a file system of type %#x", st.Type)
}

func checkGroupCrash(t *testing.T, e *simEnv, stage string, at int) {
	// 12 new clients, 4 of them with a second request: the two requests of one client share its index
	// directories' fsyncs, and all 16 share the claim directory's.
	ms := e.addMinions(12)
	var group []groupMember
	for i, m := range ms {
		group = append(group, groupMember{m.ID(), uuid.NewString()})
		if i%3 == 0 {
			group = append(group, groupMember{m.ID(), uuid.NewString()})
		}
	}
	pairs := make([]string, len(group))
	for i, g := range group {
		pairs[i] = g.minion + ":" + g.request
	}
	h := testproc.Start(t, childEnv(e, envChild+"=group", envGroup+"="+strings.Join(pairs, ","),
		envPauseAt+"="+stage, envPauseCount+"="+strconv.Itoa(at))[len(os.Environ()):]...)
	lines, err := h.Rest(t)
	var acked []string
	for _, l := range lines {
		if r, ok := strings.CutPrefix(l, "ACK "); ok {
			acked = append(acked, r)
		}
	}
	if ws, ok := h.Cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL ||
		!slices.Contains(lines, "KILL") {
		t.Fatalf("the group child did not die at %s #%d: %v, said %q", stage, at, err, lines)
	}

	clk := newFakeClock()
	d := e.dispatcher(withClock(clk))
	fs := mustFileStore(t, d)
	ctx := context.Background()
	present := map[string]*claims.Claim{}
	for _, g := range group {
		c, err := fs.Get(ctx, g.request)
		switch {
		case err == nil:
			present[g.request] = c
		case !errors.Is(err, claims.ErrNoClaim):
			t.Fatalf("claim %s after kill at %s: %v", g.request, stage, err)
		}
	}
	for _, r := range acked {
		if present[r] == nil {
			t.Fatalf("kill at %s: the acknowledged claim %s is gone", stage, r)
		}
	}
	// Every claim has its index entries: the quarantine check, which reads only the client's index, and
	// the adopter, which reads only the open index, see it.
	for _, g := range group {
		c := present[g.request]
		if c == nil {
			continue
		}
		listed, err := fs.ListByClient(ctx, g.minion)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(listed, func(l *claims.Claim) bool { return l.RequestID == g.request }) {
			t.Fatalf("kill at %s: claim %s (%s) missing from its client's index", stage, g.request, c.Phase)
		}
		if c.Unresolved() {
			open, err := fs.ListUnresolved(ctx, g.minion)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(open, func(l *claims.Claim) bool { return l.RequestID == g.request }) {
				t.Fatalf("kill at %s: unresolved claim %s (%s) missing from the open index", stage, g.request, c.Phase)
			}
		}
	}
	// Nothing unclaimed was published: every run publication is a present claim's JID with its intent.
	published := map[string]int{}
	for _, p := range e.sim.Publications() {
		if p.Fun != funRun {
			continue
		}
		published[p.JID]++
		var owner *claims.Claim
		for _, c := range present {
			if c.JID == p.JID {
				owner = c
			}
		}
		if owner == nil || !owner.WasDispatched() {
			t.Fatalf("kill at %s: publication %s without a claim holding its dispatch intent (%+v)", stage, p.JID, owner)
		}
	}
	// Started again after every window closed: each request is published at most once in all.
	advanceWindows(d, clk, defaultLaunchGrace+time.Second)
	for _, g := range group {
		if _, err := d.Start(ctx, g.minion, g.request, receipt.ProfileConfigure); err != nil {
			t.Fatalf("restart of %s after kill at %s: %v", g.request, stage, err)
		}
	}
	e.quiesce()
	for _, g := range group {
		c, err := fs.Get(ctx, g.request)
		if err != nil {
			t.Fatalf("request %s after its restart: %v", g.request, err)
		}
		if n := e.sim.PublicationCount(funRun, c.JID); n > 1 {
			t.Fatalf("kill at %s: request %s published %d times", stage, g.request, n)
		}
		if old := present[g.request]; old != nil && old.JID != c.JID {
			t.Fatalf("kill at %s: request %s changed its JID %s -> %s", stage, g.request, old.JID, c.JID)
		}
	}
	t.Logf("kill at %s: %d of %d Starts acknowledged, %d claims present, %d published before the kill",
		stage, len(acked), len(group), len(present), len(published))
}

// queueHold makes groups form for the group child: for a queued step, or the file-system sync that a
// queue of two or more makes, a sync in flight waits (at most a second each time) until enough members
// queued behind it: the at-th queued member for a queued step (the child dies there), two more per
// file-system sync so far for the file-system sync. The group queues a writer only when three fsync their
// own at once (or it is busy), so for the group's steps the writers' own fsyncs wait too.
type queueHold struct {
	queuedAt string   // the queued step counted
	leaders  []string // the leaders' steps that wait
	fsSync   bool     // count two queued members per file-system sync
	need     int

	mu      sync.Mutex
	queued  int
	fsSyncs int
	changed chan struct{} // closed and replaced at every queued member
}

func newQueueHold(stage string, at int) *queueHold {
	h := &queueHold{changed: make(chan struct{})}
	switch stage {
	case "dir-sync-queued":
		h.queuedAt, h.leaders, h.need = stage, []string{"dir-fsync"}, at
	case "sync-queued":
		h.queuedAt, h.leaders, h.need = stage, []string{"own-sync", "lone-sync", "fs-sync"}, at
	case "lone-sync":
		h.queuedAt, h.leaders, h.need = stage, []string{"own-sync"}, at
	case "fs-sync":
		h.queuedAt, h.leaders, h.fsSync = "sync-queued", []string{"own-sync", "lone-sync"}, true
	}
	return h
}

func (h *queueHold) step(s string) {
	if s == h.queuedAt {
		h.mu.Lock()
		h.queued++
		close(h.changed)
		h.changed = make(chan struct{})
		h.mu.Unlock()
		return
	}
	if s == "fs-sync" && h.fsSync {
		h.mu.Lock()
		h.fsSyncs++
		h.mu.Unlock()
	}
	if !slices.Contains(h.leaders, s) {
		return
	}
	deadline := time.After(time.Second)
	for {
		h.mu.Lock()
		need := h.need
		if h.fsSync {
			need = 2 * (h.fsSyncs + 1)
		}
		enough, changed := h.queued >= need, h.changed
		h.mu.Unlock()
		if enough {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			return
		}
	}
}
