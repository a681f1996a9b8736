package oduflow

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/uuid"

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
	const procs = 4
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bytes.Buffer, procs)
	barrier := make([]io.WriteCloser, procs) // each child's stdin: one line starts them all
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = childEnv(e, envChild+"=starter", envMinion+"="+m.ID(), envRequest+"="+req)
		outs[i] = &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = outs[i], os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		barrier[i] = in
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	for _, in := range barrier {
		if _, err := io.WriteString(in, "go\n"); err != nil {
			t.Fatal(err)
		}
		_ = in.Close()
	}
	created := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
		var c, bad int
		if _, err := fmt.Sscanf(strings.TrimSpace(outs[i].String()), "created=%d bad=%d", &c, &bad); err != nil || bad != 0 {
			t.Fatalf("child %d output %q", i, outs[i].String())
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
