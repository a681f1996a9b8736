package oduflow

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/oduflow/oduflowtest/fakeminion"
	"github.com/oduflow/oduflow-go/receipt"
)

// The "real parts" path: the simulator's minion runs the real Python oduflow_job module (fakeminion.PythonHost),
// with its durable receipts, locks and fork per request.
func startPyMinion(t *testing.T, e *simEnv, cfg fakeminion.PythonConfig) (string, *fakeminion.PythonHost) {
	t.Helper()
	return startPyMinionNamed(t, e, cfg, newMinionID())
}

// startPyMinionNamed is startPyMinion with the minion id given (a host name, say).
func startPyMinionNamed(t *testing.T, e *simEnv, cfg fakeminion.PythonConfig, id string) (string, *fakeminion.PythonHost) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := fakeminion.StartPython(ctx, t.TempDir(), fakeminion.WithPythonConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	pub, err := h.ProvisionKey(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.sim.AcceptMinionKey(id, pub); err != nil {
		t.Fatal(err)
	}
	e.sim.AddMinion(id, h.Handler(id))
	return id, h
}

func executions(t *testing.T, h *fakeminion.PythonHost, minion string) int {
	t.Helper()
	lines, err := h.Marker(minion)
	if err != nil {
		t.Fatal(err)
	}
	return len(lines)
}

func TestPythonModuleEndToEnd(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	minion, h := startPyMinion(t, e, fakeminion.PythonConfig{})
	d := e.dispatcher(pyTimers())
	ctx := context.Background()

	ready, err := d.Ping(ctx, minion)
	if err != nil || !ready.Ready() {
		t.Fatalf("ping: %+v %v", ready, err)
	}
	cfg := uuid.NewString()
	first := mustStart(t, d, receipt.ProfileConfigure, minion, cfg)
	got := waitFinal(t, d, receipt.ProfileConfigure, minion, cfg)
	if got.Status != receipt.StatusSucceeded || got.Passed != 3 || got.Total != 3 {
		t.Fatalf("configure: %+v", got)
	}
	prod := uuid.NewString()
	mustStart(t, d, receipt.ProfileProduction, minion, prod)
	got = waitFinal(t, d, receipt.ProfileProduction, minion, prod)
	if got.Status != receipt.StatusFailed || got.Passed != 2 || got.Total != 3 {
		t.Fatalf("production: %+v", got)
	}
	again := mustStart(t, d, receipt.ProfileConfigure, minion, cfg)
	if *again.JID != *first.JID || again.Status != receipt.StatusSucceeded {
		t.Fatalf("repeat: %+v", again)
	}
	if e.runs() != 2 || executions(t, h, minion) != 2 {
		t.Fatalf("runs %d executions %d", e.runs(), executions(t, h, minion))
	}
}

func TestPythonModuleLostReturnAndLostReply(t *testing.T) {
	t.Parallel()
	e := startSim(t)
	minion, h := startPyMinion(t, e, fakeminion.PythonConfig{})
	ctx := context.Background()

	// Lost return: recovered by polling the module's durable receipt.
	d := e.dispatcher(pyTimers(), onStep(stepPublishSending, func() { e.sim.DropNextReturn("") }))
	req := uuid.NewString()
	mustStart(t, d, receipt.ProfileConfigure, minion, req)
	if got := waitFinal(t, d, receipt.ProfileConfigure, minion, req); got.Status != receipt.StatusSucceeded || got.Total != 3 {
		t.Fatalf("lost return: %+v", got)
	}

	// Lost publish reply (and lost return): unknown + quarantine at once, never republished; the worker goes
	// on polling, and the module's durable receipt replaces unknown.
	req2 := uuid.NewString()
	var d2 *Dispatcher
	d2 = e.dispatcher(pyTimers(), onStep(stepDispatchRecorded, func() { loseReplyAndReturn(t, e, d2, req2) }))
	mustStart(t, d2, receipt.ProfileProduction, minion, req2)
	c := waitClaim(t, d2, req2, "final", func(c *claims.Claim) bool { return c.Phase.Final() })
	if c.Status != receipt.StatusUnknown || c.ErrorCode != claims.CodeOutcomeUnknown || !c.Quarantining() {
		t.Fatalf("lost reply: %+v", c)
	}
	c = waitClaim(t, d2, req2, "resolved", func(c *claims.Claim) bool { return c.Status != receipt.StatusUnknown })
	if c.Status != receipt.StatusFailed || c.Passed != 2 || c.Total != 3 || c.Evidence != evidenceReceipt || c.Quarantining() {
		t.Fatalf("after the poll: %+v", c)
	}
	if _, err := d2.Reconcile(ctx, minion, req2, FromMinion{}); !errors.Is(err, ErrNotUnknown) {
		t.Fatalf("reconcile of a resolved request: %v", err)
	}
	if e.runs() != 2 || executions(t, h, minion) != 2 {
		t.Fatalf("runs %d executions %d", e.runs(), executions(t, h, minion))
	}
}

// pyTimers gives the Python-hosted minion's calls room: each capabilities or status call starts a Python
// interpreter that imports Salt, which takes seconds on a loaded 2-core CI machine (a 2 s CallTimeout made
// the preflight end capability_unverified there). The windows keep their order (call < wait < deadline).
func pyTimers() Option {
	t := testTimers()
	t.CallTimeout = 10 * time.Second
	t.ExecutionWait = 30 * time.Second
	t.HardDeadline = 32 * time.Second
	t.StatusExpiry = 34 * time.Second
	return WithTimers(t)
}
