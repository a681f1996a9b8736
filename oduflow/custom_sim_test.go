package oduflow

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oduflow/oduflow-go/internal/errmark"
	receiptproof "github.com/oduflow/oduflow-go/receipt/proof"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// cstMinion is a Go model of oduflow_job for custom executions: it verifies the custom payload exactly as
// the Python module does (exactly digest and high; the digest of high's canonical JSON must match) and
// answers with protocol 1 receipts carrying the state digest. A state id containing "fail" fails.
type cstMinion struct {
	id  string
	key *rsa.PrivateKey

	mu       sync.Mutex
	hold     chan struct{} // non-nil: custom runs block until released
	terminal map[string]receipt.Receipt
	running  map[string]receipt.Receipt
	refused  int
	payloads []string
	mark     int64 // fencing: the highest token started or fenced

	// signRun: the module signs its run's terminal receipt over the run's proof_nonce and advertises it
	// ("proof": {"run_return": true}), as oduflow_job does.
	signRun atomic.Bool
}

func newCstMinion(id string) *cstMinion {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return &cstMinion{id: id, key: k, terminal: map[string]receipt.Receipt{}, running: map[string]receipt.Receipt{}}
}

func (m *cstMinion) setHold(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if on && m.hold == nil {
		m.hold = make(chan struct{})
	}
	if !on && m.hold != nil {
		close(m.hold)
		m.hold = nil
	}
}

func cstArg(args []any, i int) string {
	if i < len(args) {
		s, _ := args[i].(string)
		return s
	}
	return ""
}

func cstValue(r receipt.Receipt) map[string]any {
	v := map[string]any{"protocol": int64(1), "minion_id": r.MinionID, "request_id": r.RequestID, "jid": r.JID,
		"profile": string(r.Profile), "state_digest": r.StateDigest, "status": string(r.Status),
		"passed": int64(r.Passed), "total": int64(r.Total)}
	if r.Code != "" {
		v["code"] = string(r.Code)
	}
	return v
}

// cstToken reads a fence token argument (an integer of the decoded publication).
func cstToken(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case uint64:
		return int64(x)
	case int:
		return int64(x)
	}
	return 0
}

// fence is oduflow_job.fence as the module answers it: raise the mark; a started or finished run's
// receipt, else a terminal fenced receipt for that publication.
func (m *cstMinion) fence(job salttest.Job) (any, int) {
	request, jid, profile := cstArg(job.Args, 0), cstArg(job.Args, 1), cstArg(job.Args, 2)
	var tok int64
	if len(job.Args) > 3 {
		tok = cstToken(job.Args[3])
	}
	if tok < 1 {
		return "oduflow_job: invalid fence token", 1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mark = max(m.mark, tok)
	if r, ok := m.terminal[request]; ok {
		return cstValue(r), 0
	}
	if r, ok := m.running[request]; ok {
		return cstValue(r), 0
	}
	r := receipt.Receipt{Protocol: 1, MinionID: m.id, RequestID: request, JID: jid,
		Profile: receipt.Profile(profile), Status: receipt.StatusFailed, Code: receipt.CodeFenced}
	m.terminal[request] = r
	return cstValue(r), 0
}

// cstVerifyPayload returns the digest and the number of states, or ok false.
func cstVerifyPayload(text string) (digest string, states int, failing int, ok bool) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v map[string]any
	if dec.Decode(&v) != nil || len(v) != 2 {
		return "", 0, 0, false
	}
	digest, _ = v["digest"].(string)
	high, isMap := v["high"].(map[string]any)
	if !isMap || digest == "" {
		return "", 0, 0, false
	}
	canon, err := receipt.CanonicalJSON(high)
	if err != nil || receipt.Digest(canon) != digest || stateDataJSON(digest, canon) != text {
		return "", 0, 0, false
	}
	for id, decl := range high {
		mods, _ := decl.(map[string]any)
		for k := range mods {
			if strings.HasPrefix(k, "__") {
				continue
			}
			states++
			if strings.Contains(id, "fail") {
				failing++
			}
		}
	}
	return digest, states, failing, true
}

func (m *cstMinion) handle(ctx context.Context, job salttest.Job) (any, int) {
	switch job.Fun {
	case "test.ping":
		return true, 0
	case funCapabilities:
		return map[string]any{"protocol": int64(1), "module": "oduflow_job", "pillar_ready": true,
			"runtime_guard": true, "proof": map[string]any{"alg": receiptproof.Alg, "ready": true, "run_return": m.signRun.Load()},
			"fencing": map[string]any{"version": int64(1), "ready": true, "token_required": true}}, 0
	case funFence:
		return m.fence(job)
	case funAttest:
		ans, code := m.handle(ctx, salttest.Job{Fun: funStatus, Args: job.Args, JID: job.JID})
		r, err := receipt.FromValue(ans)
		if code != 0 || err != nil {
			return ans, code
		}
		proof, err := receiptproof.Sign(m.key, cstArg(job.Args, 3), r)
		if err != nil {
			return "oduflow_job: invalid nonce", 1
		}
		return proof, 0
	case funStatus:
		request, jid, profile := cstArg(job.Args, 0), cstArg(job.Args, 1), cstArg(job.Args, 2)
		m.mu.Lock()
		defer m.mu.Unlock()
		if r, ok := m.terminal[request]; ok && r.JID == jid {
			return cstValue(r), 0
		}
		if r, ok := m.running[request]; ok && r.JID == jid {
			return cstValue(r), 0
		}
		return cstValue(receipt.Receipt{Protocol: 1, MinionID: m.id, RequestID: request, JID: jid,
			Profile: receipt.Profile(profile), Status: receipt.StatusNotStarted}), 0
	case funRun:
	default:
		return "'" + job.Fun + "' is not available.", 254
	}
	request, profile, data := cstArg(job.Args, 0), cstArg(job.Args, 1), cstArg(job.Args, 2)
	tok := cstToken(job.Kwargs["fence_token"])
	if tok < 1 {
		return "oduflow_job: a fence token is required", 1
	}
	m.mu.Lock()
	if r, ok := m.terminal[request]; ok {
		m.mu.Unlock()
		return cstValue(r), 0 // this publication's evidence first (a fenced one included)
	}
	if tok <= m.mark {
		r := receipt.Receipt{Protocol: 1, MinionID: m.id, RequestID: request, JID: job.JID,
			Profile: receipt.Profile(profile), Status: receipt.StatusFailed, Code: receipt.CodeFenced}
		m.terminal[request] = r
		m.mu.Unlock()
		return cstValue(r), 0
	}
	m.mark = tok
	m.mu.Unlock()
	r := receipt.Receipt{Protocol: 1, MinionID: m.id, RequestID: request, JID: job.JID,
		Profile: receipt.Profile(profile), Status: receipt.StatusSucceeded, Passed: 2, Total: 2}
	if profile == string(receipt.ProfileCustom) {
		digest, states, failing, ok := cstVerifyPayload(data)
		if !ok {
			m.mu.Lock()
			m.refused++
			m.mu.Unlock()
			return "oduflow_job: state digest mismatch", 1
		}
		r.StateDigest, r.Passed, r.Total = digest, states-failing, states
		if failing > 0 {
			r.Status = receipt.StatusFailed
		}
	} else if data != "" {
		return "oduflow_job: fixed profiles take no state data", 1
	}
	m.mu.Lock()
	m.payloads = append(m.payloads, data)
	run := r
	run.Status, run.Passed, run.Total = receipt.StatusRunning, 0, 0
	m.running[request] = run
	hold := m.hold
	m.mu.Unlock()
	if hold != nil && profile == string(receipt.ProfileCustom) {
		select {
		case <-hold:
		case <-ctx.Done():
			return "killed", 1
		}
	}
	m.mu.Lock()
	delete(m.running, request)
	m.terminal[request] = r
	m.mu.Unlock()
	if nonce, ok := job.Kwargs["proof_nonce"].(string); ok && m.signRun.Load() {
		if proof, err := receiptproof.Sign(m.key, nonce, r); err == nil {
			proof["receipt"] = cstValue(r)
			return proof, 0
		}
	}
	return cstValue(r), 0
}

// cstEnv: a simulator, one custom-capable minion, a catalog and a dispatcher using both.
type cstEnv struct {
	t      *testing.T
	sim    *salttest.Master
	minion *cstMinion
	cat    *catalog.FileStore
	d      *Dispatcher
	// dropRun makes the simulator drop the reply of the next oduflow_job.run publish (not of the
	// capability check before it): the run happens, the master cannot prove it.
	dropRun atomic.Bool
	// loseRun makes the next oduflow_job.run publish fail as outcome-unknown without being sent (a reply
	// lost for a publication that never reached the minion: it stays unknown).
	loseRun atomic.Bool
}

// cstLosingPublisher implements cstEnv.loseRun.
type cstLosingPublisher struct {
	Publisher
	lose *atomic.Bool
}

func (p cstLosingPublisher) Publish(ctx context.Context, req salt.PublishRequest) (*salt.PublishResult, error) {
	if req.Fun == funRun && p.lose.Swap(false) {
		return nil, errmark.Mark(errors.New("test: reply lost"), salt.ErrOutcomeUnknown)
	}
	return p.Publisher.Publish(ctx, req)
}

func cstLogger() *slog.Logger {
	if os.Getenv("ODUFLOW_TEST_VERBOSE") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func cstTimers() Timers {
	return Timers{ExecutionWait: 8 * time.Second, HardDeadline: 9 * time.Second, StatusExpiry: 10 * time.Second,
		LaunchGrace: defaultLaunchGrace, LeaseWait: time.Second, PollBudget: 16, CallTimeout: 2 * time.Second}
}

func newCstEnv(t *testing.T) *cstEnv {
	t.Helper()
	ctx := context.Background()
	sim, err := salttest.Start(ctx, salttest.WithDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	key, err := os.ReadFile(sim.KeyFile())
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), ".root_key")
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	client, err := salt.NewClient(sim.Addr(), salt.WithAuth(salt.UserKey("root", keyFile)),
		salt.WithRequestTimeout(2*time.Second), salt.WithLogger(cstLogger()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	m := newCstMinion("client-" + receipt.NewRequestID())
	sim.AddMinion(m.id, m.handle)
	der, _ := x509.MarshalPKIXPublicKey(&m.key.PublicKey)
	if err := sim.AcceptMinionKey(m.id, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	cat, err := catalog.Open(filepath.Join(base, "catalog"), catalog.WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	events := SaltEvents(sim.EventsAddr(), salt.WithReconnectBackoff(20*time.Millisecond, 200*time.Millisecond),
		salt.WithLogger(cstLogger()))
	e := &cstEnv{t: t, sim: sim, minion: m, cat: cat}
	e.d, err = New(cstLosingPublisher{Publisher: client, lose: &e.loseRun}, events, WithClaimDir(filepath.Join(base, "claims")), WithTimers(cstTimers()), WithPKIDir(sim.PKIDir()),
		WithLogger(cstLogger()), WithCustomCatalog(cat), withStepHook(func(step string) {
			if step == stepPublishSending && e.dropRun.Swap(false) {
				sim.DropNextReply("publish")
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.d.Close(closedContext()) })
	return e
}

func (e *cstEnv) runs() int {
	n := 0
	for _, p := range e.sim.Publications() {
		if p.Fun == funRun && len(p.Args) > 1 && p.Args[1] == string(receipt.ProfileCustom) {
			n++
		}
	}
	return n
}

// configure runs the initial configuration to its receipt.
func (e *cstEnv) configure() {
	e.t.Helper()
	ctx := context.Background()
	req := receipt.NewRequestID()
	if _, err := e.d.Start(ctx, e.minion.id, req, receipt.ProfileConfigure); err != nil {
		e.t.Fatal(err)
	}
	e.waitClaimFinal(req)
}

func (e *cstEnv) waitClaimFinal(req string) *claims.Claim {
	e.t.Helper()
	var c *claims.Claim
	if !waitUntil(20*time.Second, func() bool {
		got, err := e.d.store.Get(context.Background(), req)
		c = got
		return err == nil && got.Phase.Final()
	}) {
		e.t.Fatalf("request %s not final", req)
	}
	return c
}

// define creates and assigns a definition.
func (e *cstEnv) define(company, source string) catalog.Definition {
	e.t.Helper()
	ctx := context.Background()
	def, err := e.cat.CreateDefinition(ctx, company, "test-"+receipt.NewRequestID(), []byte(source))
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.cat.Assign(ctx, def.ID, e.minion.id, company); err != nil {
		e.t.Fatal(err)
	}
	return def
}

// final waits until CustomStatus of req is neither running nor not_started.
func (e *cstEnv) final(req string) CustomResponse {
	e.t.Helper()
	var r CustomResponse
	var err error
	if !waitUntil(20*time.Second, func() bool {
		r, err = e.d.CustomStatus(context.Background(), e.minion.id, req)
		return err != nil || r.Status != receipt.StatusRunning && r.Status != receipt.StatusNotStarted
	}) {
		e.t.Fatalf("custom request %s not final", req)
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func cstJSONHas(v any, needle string) bool {
	b, _ := json.Marshal(v)
	return bytes.Contains(b, []byte(needle))
}
