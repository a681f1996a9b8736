package oduflow

// Test knobs: options only this package's tests use. The dispatcher reads the config fields they set;
// nothing outside the package can set them.

import (
	"os"
	"testing"
	"time"
)

// withClock injects the time source (tests).
func withClock(clk clockSource) Option { return func(c *config) { c.clock = clk } }

// withStepHook calls fn at each worker step (tests: pause or announce steps to kill a worker at each).
// Steps: the step* constants.
func withStepHook(fn func(step string)) Option { return func(c *config) { c.stepHook = fn } }

// detachedLog names the worker log opened at each launch, after the claim (tests: a log that cannot be
// opened safely fails the launch).
func detachedLog(path string) Option { return func(c *config) { c.workerLog = path } }

// withWorkerLogFile sends detached workers' output to f, opened by the caller (tests).
func withWorkerLogFile(f *os.File) Option { return func(c *config) { c.workerLogFile = f } }

// setHostClock makes fs's host clock read d after the stamp (a claim's CreatedClock or DispatchedClock):
// tests move the file store's status windows with it.
func setHostClock(t testing.TB, fs *FileClaimStore, stamp string, d time.Duration) {
	t.Helper()
	st, err := parseHostStamp(stamp)
	if err != nil {
		t.Fatal(err)
	}
	fs.clock.offset.Store(0)
	now, err := fs.clock.now()
	if err != nil {
		t.Fatal(err)
	}
	fs.clock.offset.Store(st.ns + int64(d) - now.ns)
}

// advanceWindows moves the test's wall clock and, when d's store is a FileClaimStore, its host clock by
// dur: both the wall-clock times and the store's windows.
func advanceWindows(d *Dispatcher, clk *fakeClock, dur time.Duration) {
	clk.Advance(dur)
	if fs, ok := d.store.(*FileClaimStore); ok {
		fs.clock.offset.Add(int64(dur))
	}
}
