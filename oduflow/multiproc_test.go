package oduflow

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/internal/testproc"
	"github.com/oduflow/oduflow-go/receipt"
)

// 1,000 concurrent Start calls for one request from 4 OS processes sharing one claim directory: exactly one
// claim is created and exactly one oduflow_job.run is published (counted at the simulator).
func TestAtMostOnceAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	e := startSim(t)
	m := e.addMinion()
	d := e.dispatcher() // creates the claim dir
	req := uuid.NewString()
	g := testproc.StartGroup(t, 4, childEnv(e, envChild+"=starter", envMinion+"="+m.ID(), envRequest+"="+req))
	g.Release(t)
	created := 0
	for i, out := range g.Outputs(t) {
		var c, bad int
		if _, err := fmt.Sscanf(strings.TrimSpace(out), "created=%d bad=%d", &c, &bad); err != nil || bad != 0 {
			t.Fatalf("child %d output %q", i, out)
		}
		created += c
	}
	if created != 1 {
		t.Fatalf("claims created: %d", created)
	}
	got := waitFinal(t, d, receipt.ProfileConfigure, m.ID(), req)
	if got.Status != receipt.StatusSucceeded || e.runs() != 1 || m.Runs() != 1 {
		t.Fatalf("%+v runs %d minion %d", got, e.runs(), m.Runs())
	}
}
