package etcdtest

import (
	"context"
	"sync"

	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// protoMinion is a minimal protocol-1 oduflow_job minion for the fixed profiles, for salttest masters:
// capabilities, run (records a terminal receipt, succeeded 1/1, once per request) and status (that
// receipt, or not_started). One protoMinion may serve several masters: its receipts are the minion's, so a
// dispatcher talking to another master reads what a run through the first one left.
type protoMinion struct {
	id string

	mu       sync.Mutex
	receipts map[string]receipt.Receipt // request id -> terminal receipt
	runs     int
}

func newProtoMinion(id string) *protoMinion {
	return &protoMinion{id: id, receipts: map[string]receipt.Receipt{}}
}

func (m *protoMinion) runCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runs
}

func (m *protoMinion) handle(_ context.Context, job salttest.Job) (any, int) {
	arg := func(i int) string {
		if i < len(job.Args) {
			s, _ := job.Args[i].(string)
			return s
		}
		return ""
	}
	switch job.Fun {
	case "test.ping":
		return true, 0
	case "oduflow_job.capabilities":
		return map[string]any{"protocol": int64(1), "module": "oduflow_job", "pillar_ready": true,
			"runtime_guard": true}, 0
	case "oduflow_job.run":
		return m.run(arg(0), job.JID, arg(1))
	case "oduflow_job.status":
		return m.status(arg(0), arg(1), arg(2))
	}
	return "'" + job.Fun + "' is not available.", 254
}

func (m *protoMinion) run(request, jid, profile string) (any, int) {
	if receipt.ValidateRequestID(request) != nil || receipt.ValidateJID(jid) != nil {
		return "oduflow_job: invalid request id or jid", 1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.receipts[request]; ok {
		if r.JID != jid {
			return "oduflow_job: binding conflict", 1
		}
		return receiptValue(r), 0
	}
	m.runs++
	r := receipt.Receipt{Protocol: 1, MinionID: m.id, RequestID: request, JID: jid, Profile: receipt.Profile(profile),
		Status: receipt.StatusSucceeded, Passed: 1, Total: 1}
	m.receipts[request] = r
	return receiptValue(r), 0
}

func (m *protoMinion) status(request, jid, profile string) (any, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.receipts[request]; ok {
		return receiptValue(r), 0
	}
	return receiptValue(receipt.Receipt{Protocol: 1, MinionID: m.id, RequestID: request, JID: jid,
		Profile: receipt.Profile(profile), Status: receipt.StatusNotStarted}), 0
}

// receiptValue renders a receipt as the module returns it (the nine keys).
func receiptValue(r receipt.Receipt) map[string]any {
	return map[string]any{"protocol": int64(r.Protocol), "minion_id": r.MinionID, "request_id": r.RequestID,
		"jid": r.JID, "profile": string(r.Profile), "state_digest": r.StateDigest, "status": string(r.Status),
		"passed": int64(r.Passed), "total": int64(r.Total)}
}

// startMaster starts a salttest master serving m.
func startMaster(t interface {
	TempDir() string
	Fatal(...any)
	Cleanup(func())
}, m *protoMinion) *salttest.Master {
	sim, err := salttest.Start(context.Background(), salttest.WithDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	sim.AddMinion(m.id, m.handle)
	return sim
}
