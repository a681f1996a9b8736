package etcdtest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"sync"

	"github.com/oduflow/oduflow-go/receipt"
	receiptproof "github.com/oduflow/oduflow-go/receipt/proof"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// protoMinion is a minimal protocol-1 oduflow_job minion for the fixed profiles, for salttest masters:
// capabilities (with receipt proofs), run (records a terminal receipt, succeeded 1/1, once per request),
// status (that receipt, or not_started) and attest (the status answer signed with the minion's key over
// the dispatcher's nonce). One protoMinion may serve several masters: its receipts are the minion's, so a
// dispatcher talking to another master reads what a run through the first one left.
type protoMinion struct {
	id  string
	key *rsa.PrivateKey

	mu       sync.Mutex
	receipts map[string]receipt.Receipt // request id -> terminal receipt
	runs     int
	mark     int64 // fencing: the highest token started or fenced
}

func newProtoMinion(id string) *protoMinion {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return &protoMinion{id: id, key: k, receipts: map[string]receipt.Receipt{}}
}

// publicKeyPEM is the key the master stores once it accepted the minion.
func (m *protoMinion) publicKeyPEM() []byte {
	der, _ := x509.MarshalPKIXPublicKey(&m.key.PublicKey)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
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
			"runtime_guard": true, "proof": map[string]any{"alg": receiptproof.Alg, "ready": true, "backend": "go",
				"error": ""}, "fencing": map[string]any{"version": int64(1), "ready": true, "token_required": true}}, 0
	case "oduflow_job.run":
		return m.run(arg(0), job.JID, arg(1), tokenArg(job.Kwargs["fence_token"]))
	case "oduflow_job.fence":
		var tok int64
		if len(job.Args) > 3 {
			tok = tokenArg(job.Args[3])
		}
		return m.fence(arg(0), arg(1), arg(2), tok)
	case "oduflow_job.status":
		r, refusal := m.status(arg(0), arg(1), arg(2))
		if refusal != "" {
			return refusal, 1
		}
		return receiptValue(r), 0
	case "oduflow_job.attest":
		r, refusal := m.status(arg(0), arg(1), arg(2))
		if refusal != "" {
			return refusal, 1
		}
		if receiptproof.ValidateNonce(arg(3)) != nil {
			return "oduflow_job: invalid nonce", 1
		}
		proof, err := receiptproof.Sign(m.key, arg(3), r)
		if err != nil {
			return "oduflow_job: cannot sign", 1
		}
		return proof, 0
	}
	return "'" + job.Fun + "' is not available.", 254
}

// tokenArg reads a fence token of a decoded publication (0: none or not an integer).
func tokenArg(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case uint64:
		return int64(x)
	}
	return 0
}

func (m *protoMinion) run(request, jid, profile string, token int64) (any, int) {
	if receipt.ValidateRequestID(request) != nil || receipt.ValidateJID(jid) != nil {
		return "oduflow_job: invalid request id or jid", 1
	}
	if token < 1 {
		return "oduflow_job: a fence token is required", 1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.receipts[request]; ok {
		if r.JID != jid {
			return "oduflow_job: binding conflict", 1
		}
		return receiptValue(r), 0
	}
	if token <= m.mark {
		r := receipt.Receipt{Protocol: 1, MinionID: m.id, RequestID: request, JID: jid, Profile: receipt.Profile(profile),
			Status: receipt.StatusFailed, Code: receipt.CodeFenced}
		m.receipts[request] = r
		return receiptValue(r), 0
	}
	m.mark = token
	m.runs++
	r := receipt.Receipt{Protocol: 1, MinionID: m.id, RequestID: request, JID: jid, Profile: receipt.Profile(profile),
		Status: receipt.StatusSucceeded, Passed: 1, Total: 1}
	m.receipts[request] = r
	return receiptValue(r), 0
}

// fence raises the mark and fences the publication unless it has a receipt (then answered unchanged).
func (m *protoMinion) fence(request, jid, profile string, token int64) (any, int) {
	if receipt.ValidateRequestID(request) != nil || receipt.ValidateJID(jid) != nil || token < 1 {
		return "oduflow_job: invalid request id, jid or fence token", 1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mark = max(m.mark, token)
	if r, ok := m.receipts[request]; ok {
		return receiptValue(r), 0
	}
	r := receipt.Receipt{Protocol: 1, MinionID: m.id, RequestID: request, JID: jid, Profile: receipt.Profile(profile),
		Status: receipt.StatusFailed, Code: receipt.CodeFenced}
	m.receipts[request] = r
	return receiptValue(r), 0
}

// status is the minion's receipt of request (not_started when it has none), or the text of a refusal.
func (m *protoMinion) status(request, jid, profile string) (receipt.Receipt, string) {
	if receipt.ValidateRequestID(request) != nil || receipt.ValidateJID(jid) != nil {
		return receipt.Receipt{}, "oduflow_job: invalid request id or jid"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.receipts[request]; ok {
		return r, ""
	}
	return receipt.Receipt{Protocol: 1, MinionID: m.id, RequestID: request, JID: jid,
		Profile: receipt.Profile(profile), Status: receipt.StatusNotStarted}, ""
}

// receiptValue renders a receipt as the module returns it (the nine keys, and "code" for a fenced one).
func receiptValue(r receipt.Receipt) map[string]any {
	v := map[string]any{"protocol": int64(r.Protocol), "minion_id": r.MinionID, "request_id": r.RequestID,
		"jid": r.JID, "profile": string(r.Profile), "state_digest": r.StateDigest, "status": string(r.Status),
		"passed": int64(r.Passed), "total": int64(r.Total)}
	if r.Code != "" {
		v["code"] = string(r.Code)
	}
	return v
}

// startMaster starts a salttest master serving m, with m's key accepted (in the master's PKIDir).
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
	if err := sim.AcceptMinionKey(m.id, m.publicKeyPEM()); err != nil {
		t.Fatal(err)
	}
	return sim
}
