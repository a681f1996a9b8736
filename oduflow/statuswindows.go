package oduflow

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"
)

// Liveness is what a claim store that measures the status windows itself (FileClaimStore, etcdstore)
// reads about one claim at one instant. The status rules need nothing else: no replica compares its
// own wall clock with a time another replica wrote.
type Liveness struct {
	// RequestLockHeld: a worker holds the request lock (what Status calls running).
	RequestLockHeld bool
	// LaunchOpen: the launch window, Timers.LaunchGrace from the claim's creation, has not run out.
	LaunchOpen bool
	// DispatchOpen: the dispatch window, Timers.StatusExpiry from the recorded dispatch intent, has not
	// run out (false for a claim without an intent).
	DispatchOpen bool
}

// WindowedStore is the optional capability of a Store that measures the status rules' two windows itself,
// with what it expires (etcdstore: a launching key and a dispatch-window key, each on an etcd lease of
// the window's TTL, so the cluster expires them) or with one host's monotonic clock (FileClaimStore:
// CLOCK_BOOTTIME and the boot id, stamped into the claim by the store at creation and at the intent).
// New tells the store the windows (SetStatusWindows: the dispatcher's Timers.LaunchGrace and
// StatusExpiry); dispatchers sharing one store value must use the same two timers. Liveness reads the
// windows and the request lock of a claim already read; GetWithLiveness reads the claim with them at
// one instant.
type WindowedStore interface {
	SetStatusWindows(launchGrace, statusExpiry time.Duration)
	Liveness(ctx context.Context, c *Claim) (Liveness, error)
	GetWithLiveness(ctx context.Context, requestID string) (*Claim, Liveness, error)
}

// hostStamp is a reading of this host's monotonic clock: the boot id and CLOCK_BOOTTIME (which, unlike
// CLOCK_MONOTONIC, goes on during suspend), formatted "<boot id>/<nanoseconds>". A stamp from another
// boot (or another host) is older than any window: every window it opened has run out.
type hostStamp struct {
	boot string
	ns   int64
}

func (h hostStamp) String() string { return h.boot + "/" + strconv.FormatInt(h.ns, 10) }

// parseHostStamp parses a stamp written by hostStamp.String.
func parseHostStamp(s string) (hostStamp, error) {
	boot, ns, ok := strings.Cut(s, "/")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || n < 0 || !validBootID(boot) {
		return hostStamp{}, errors.Wrap(ErrCorruptClaim, "host clock stamp")
	}
	return hostStamp{boot: boot, ns: n}, nil
}

// validBootID: the kernel's boot id is a UUID (36 characters of hex digits and dashes).
func validBootID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || c == '-') {
			return false
		}
	}
	return true
}

// hostClock reads this host's boot id (once) and CLOCK_BOOTTIME.
type hostClock struct {
	once sync.Once
	boot string
	err  error
	// offset is added to every reading: tests move a store's windows with it; always 0 otherwise.
	offset atomic.Int64
}

func (h *hostClock) now() (hostStamp, error) {
	h.once.Do(func() {
		b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
		if err != nil {
			h.err = errors.Wrap(err, "oduflow: read the boot id")
			return
		}
		h.boot = strings.TrimSpace(string(b))
		if !validBootID(h.boot) {
			h.err = errors.Newf("oduflow: boot id %q is not a UUID", h.boot)
		}
	})
	if h.err != nil {
		return hostStamp{}, h.err
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return hostStamp{}, errors.Wrap(err, "oduflow: read CLOCK_BOOTTIME")
	}
	return hostStamp{boot: h.boot, ns: ts.Nano() + h.offset.Load()}, nil
}

// windowOpen reports whether the window of length d opened at the stamp s is still open at now: same boot,
// and no more than d since.
func windowOpen(s string, now hostStamp, d time.Duration) bool {
	if s == "" {
		return false
	}
	st, err := parseHostStamp(s)
	if err != nil || st.boot != now.boot {
		return false
	}
	return now.ns-st.ns <= int64(d)
}
