package oduflow

// Test knobs: options only this package's tests use. The dispatcher reads the config fields they set;
// nothing outside the package can set them.

import (
	"os"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/filestorehook"
	"github.com/oduflow/oduflow-go/internal/hostclock"
	"github.com/oduflow/oduflow-go/oduflow/filestore"
)

// withClock injects the time source (tests). A *fakeClock also gives the default file store its host
// clock, which only advanceWindows and setHostClock move (the wall clock alone does not move the store's
// windows, as on a real host).
func withClock(clk clockSource) Option {
	return func(c *config) {
		c.clock = clk
		if fc, ok := clk.(*fakeClock); ok {
			c.fileOpts = append(c.fileOpts, filestorehook.WithClock(&fc.host))
		}
	}
}

// withStepHook calls fn at each worker step (tests: pause or announce steps to kill a worker at each).
// Steps: the step* constants.
func withStepHook(fn func(step string)) Option { return func(c *config) { c.stepHook = fn } }

// detachedLog names the worker log opened at each launch, after the claim (tests: a log that cannot be
// opened safely fails the launch).
func detachedLog(path string) Option { return func(c *config) { c.workerLog = path } }

// withWorkerLogFile sends detached workers' output to f, opened by the caller (tests).
func withWorkerLogFile(f *os.File) Option { return func(c *config) { c.workerLogFile = f } }

// setHostClock makes clk's host clock (that of the file store of a Dispatcher made withClock(clk)) read d
// after the stamp (a claim's CreatedClock or DispatchedClock): tests move the file store's status windows
// with it.
func setHostClock(t testing.TB, clk *fakeClock, stamp string, d time.Duration) {
	t.Helper()
	shiftHostClock(t, &clk.host, stamp, d)
}

// shiftHostClock makes hc read d after the stamp.
func shiftHostClock(t testing.TB, hc *hostclock.Clock, stamp string, d time.Duration) {
	t.Helper()
	st, ok := hostclock.Parse(stamp)
	if !ok {
		t.Fatalf("host clock stamp %q", stamp)
	}
	hc.SetShift(0)
	now, err := hc.Now()
	if err != nil {
		t.Fatal(err)
	}
	hc.SetShift(time.Duration(st.NS + int64(d) - now.NS))
}

// advanceWindows moves the test's wall clock and, when d's store is a filestore.Store (the default store
// of a Dispatcher made withClock(clk)), its host clock by dur: both the wall-clock times and the store's
// windows.
func advanceWindows(d *Dispatcher, clk *fakeClock, dur time.Duration) {
	clk.Advance(dur)
	if _, ok := d.store.(*filestore.Store); ok {
		clk.host.Shift(dur)
	}
}
