package oduflow

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Ready is Start's admission check without a request: nil while the master answers and the bus is live,
// ErrNotReady (naming the master) once the master is gone, ErrClosed once Close has begun. It writes
// nothing and publishes nothing.
func TestReadyFollowsTheMasterAndClose(t *testing.T) {
	e := startSim(t)
	d := e.dispatcher()
	ctx := context.Background()
	if err := d.Ready(ctx); err != nil {
		t.Fatalf("ready with the master up: %v", err)
	}
	if n := e.sim.PublicationCount("", ""); n != 0 {
		t.Fatalf("Ready published %d jobs", n)
	}
	if err := e.sim.Close(); err != nil {
		t.Fatal(err)
	}
	// The cached proof of the master expires after masterProofTTL.
	var err error
	waitUntil(masterProofTTL+10*time.Second, func() bool { err = d.Ready(ctx); return err != nil })
	if !errors.Is(err, ErrNotReady) || !errors.Is(err, errMasterUnreachable) && !errors.Is(err, errEventBus) {
		t.Fatalf("ready with the master gone: %v, want ErrNotReady naming the master or the bus", err)
	}
	if err := d.Close(closedContext()); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if err := d.Ready(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("ready after Close: %v, want ErrClosed", err)
	}
}
