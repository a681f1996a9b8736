package main

// Everything benchrun needs of the master simulator, in one file: when the simulator package moves or
// renames its API, only this file changes.

import (
	"context"

	"github.com/oduflow/oduflow-go/internal/saltsim"
)

type (
	simMaster  = saltsim.Sim
	simJob     = saltsim.Job
	simHandler = saltsim.MinionHandler
)

// startSimulator starts a simulator whose event socket and root key live in dir.
func startSimulator(ctx context.Context, dir string) (*simMaster, error) {
	return saltsim.Start(ctx, saltsim.WithDir(dir), saltsim.WithLogger(discard()))
}

func simRequestAddr(s *simMaster) string { return s.RequestAddr() }
func simEventsAddr(s *simMaster) string  { return s.EventAddr() }

// simPingHandler answers test.ping at once.
func simPingHandler() simHandler { return saltsim.TestPing() }
