// Package hostclock reads this host's monotonic clock as a stamp a claim can carry: the boot id and
// CLOCK_BOOTTIME (which, unlike CLOCK_MONOTONIC, goes on during suspend), formatted
// "<boot id>/<nanoseconds>". The file claim store (oduflow/filestore) measures the status windows with
// it, never with a wall clock; package claims checks the form of the stamps a claim carries
// (Claim.Validate). A stamp from another boot (or another host) is older than any window: every window it
// opened has run out.
package hostclock

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"
)

// Stamp is one reading of a host's monotonic clock.
type Stamp struct {
	Boot string // the kernel's boot id (a UUID)
	NS   int64  // CLOCK_BOOTTIME in nanoseconds
}

// String is the stamp as a claim stores it: "<boot id>/<nanoseconds>".
func (s Stamp) String() string { return s.Boot + "/" + strconv.FormatInt(s.NS, 10) }

// Parse parses a stamp written by Stamp.String; ok is false for anything else.
func Parse(s string) (_ Stamp, ok bool) {
	boot, ns, cut := strings.Cut(s, "/")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !cut || err != nil || n < 0 || !validBootID(boot) {
		return Stamp{}, false
	}
	return Stamp{Boot: boot, NS: n}, true
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

// Clock reads this host's boot id (once) and CLOCK_BOOTTIME. The zero value is ready to use; a Clock
// must not be copied after its first reading.
type Clock struct {
	once sync.Once
	boot string
	err  error
	// offset is added to every reading: tests move a store's windows with it; always 0 otherwise.
	offset atomic.Int64
}

// Now reads the clock.
func (c *Clock) Now() (Stamp, error) {
	c.once.Do(func() {
		b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
		if err != nil {
			c.err = errors.Wrap(err, "oduflow: read the boot id")
			return
		}
		c.boot = strings.TrimSpace(string(b))
		if !validBootID(c.boot) {
			c.err = errors.Newf("oduflow: boot id %q is not a UUID", c.boot)
		}
	})
	if c.err != nil {
		return Stamp{}, c.err
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return Stamp{}, errors.Wrap(err, "oduflow: read CLOCK_BOOTTIME")
	}
	return Stamp{Boot: c.boot, NS: ts.Nano() + c.offset.Load()}, nil
}

// Shift moves every later reading forward by d (tests only: a store's windows run out without waiting).
func (c *Clock) Shift(d time.Duration) { c.offset.Add(int64(d)) }

// SetShift sets the amount every later reading is moved forward by (tests only; 0: the host's clock).
func (c *Clock) SetShift(d time.Duration) { c.offset.Store(int64(d)) }

// WindowOpen reports whether the window of length d opened at the stamp s is still open at now: same
// boot, and no more than d since. An empty or malformed stamp opened no window.
func WindowOpen(s string, now Stamp, d time.Duration) bool {
	if s == "" {
		return false
	}
	st, ok := Parse(s)
	if !ok || st.Boot != now.Boot {
		return false
	}
	return now.NS-st.NS <= int64(d)
}
