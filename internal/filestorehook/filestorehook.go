// Package filestorehook is the configuration of one file claim store (oduflow/filestore) and the test
// hooks that only this module can set on it: package oduflow's tests kill a Start at each crash point of
// Create and move a store's status windows while a Dispatcher runs on it.
//
// filestore.Option is a func(*Config): a function of this package's type. Outside the module nobody can
// name Config, so nobody can write an Option; callers get theirs from filestore's With* functions. The
// module's own code builds the hook options here (WithStage, WithClock), and they are assignable to
// filestore.Option because the two types have the same underlying type. No hook is part of the store's
// API, and no filestore signature names this package.
package filestorehook

import (
	"time"

	"github.com/oduflow/oduflow-go/internal/hostclock"
)

// Config is what filestore.Open is configured with. The zero value is production: the default windows,
// no hook.
type Config struct {
	// LaunchGrace and StatusExpiry are the status windows (filestore.WithStatusWindows); 0: the defaults.
	LaunchGrace, StatusExpiry time.Duration
	// Stage is called at the crash points of Create, the store's own ("index-staged", "index-synced")
	// and the safe file store's (safefile.WithStageHook); nil: none.
	Stage func(stage string)
	// Clock is the host clock the store measures its status windows with (a test moves it with
	// Clock.SetShift); nil: a clock of the store's own.
	Clock *hostclock.Clock
}

// WithStage sets the crash-point hook (tests).
func WithStage(f func(stage string)) func(*Config) { return func(c *Config) { c.Stage = f } }

// WithClock sets the host clock the store's windows are measured with (tests).
func WithClock(hc *hostclock.Clock) func(*Config) { return func(c *Config) { c.Clock = hc } }
