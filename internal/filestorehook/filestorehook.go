// Package filestorehook carries the test hooks of the file claim store (oduflow/filestore) from the
// tests of this module's other packages into the store: package oduflow's tests kill a Start at each
// crash point of Create and move a store's status windows while a Dispatcher runs on it. filestore.Open
// takes them as an optional argument of this package's type, which nothing outside the module can name,
// so that no hook is part of the store's API.
package filestorehook

import "github.com/oduflow/oduflow-go/internal/hostclock"

// Hooks are the test hooks of one file store. The zero value is production: no hook.
type Hooks struct {
	// Stage is called at the crash points of Create, the store's own ("index-staged", "index-synced")
	// and the safe file store's (safefile.WithStageHook); nil: none.
	Stage func(stage string)
	// Clock is the host clock the store measures its status windows with (a test moves it with
	// Clock.Shift); nil: a clock of the store's own.
	Clock *hostclock.Clock
}
