package oduflow

// Test knobs: options only this package's tests use. The dispatcher reads the config fields they set;
// nothing outside the package can set them.

import (
	"os"
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
