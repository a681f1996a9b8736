package main

// Everything benchrun needs of the fake master, in one file: when its API moves or renames, only this file
// changes.

import (
	"context"

	"github.com/oduflow/oduflow-go/salt/salttest"
)

type (
	simMaster  = salttest.Master
	simJob     = salttest.Job
	simHandler = salttest.MinionHandler
)

// startSimulator starts a fake master whose event socket and root key live in dir.
func startSimulator(ctx context.Context, dir string) (*simMaster, error) {
	return salttest.Start(ctx, salttest.WithDir(dir), salttest.WithLogger(discard()))
}

func simRequestAddr(s *simMaster) string { return s.Addr() }
func simEventsAddr(s *simMaster) string  { return s.EventsAddr() }

// simPingHandler answers test.ping at once (the generic minion).
func simPingHandler() simHandler { return nil }
