package fakeminion

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/oduflow/oduflow-go/profiles"
	"github.com/oduflow/oduflow-go/receipt"
	receiptproof "github.com/oduflow/oduflow-go/receipt/proof"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// Result is what a run of one profile reduces to.
type Result struct {
	Status        receipt.Status
	Passed, Total int
}

// ModelOption configures a Model.
type ModelOption func(*Model)

// WithResult sets the result of runs of profile p (default: succeeded 1/1).
func WithResult(p receipt.Profile, r Result) ModelOption {
	return func(m *Model) { m.results[p] = r }
}

// WithDelay makes every run take d.
func WithDelay(d time.Duration) ModelOption { return func(m *Model) { m.delay = d } }

// WithHold keeps every run running until Release is called.
func WithHold() ModelOption { return func(m *Model) { m.hold = make(chan struct{}) } }

// WithProtocol sets the protocol capabilities reports (default 1; 0 = module absent: Salt's
// "is not available" string is returned instead).
func WithProtocol(n int) ModelOption { return func(m *Model) { m.protocol = n } }

// WithPillarReady sets pillar_ready (default true).
func WithPillarReady(b bool) ModelOption { return func(m *Model) { m.pillarReady = b } }

// WithoutProof makes the minion an older module: capabilities advertise no receipt proof and
// oduflow_job.attest is not available.
func WithoutProof() ModelOption { return func(m *Model) { m.noProof = true } }

// WithoutRunProof makes the minion a module from before signed run returns: capabilities advertise
// receipt proofs without "run_return", and a run publication carrying proof_nonce is refused as a
// caller option (that module refuses every keyword it does not know). Its receipts are proven by
// oduflow_job.attest only.
func WithoutRunProof() ModelOption { return func(m *Model) { m.noRunProof = true } }

// WithUnsignedRunReturn makes the minion advertise signed run returns but answer every run with the
// bare receipt, as the module does when signing fails at run time (its key does not load): the
// dispatcher proves the receipt with oduflow_job.attest instead.
func WithUnsignedRunReturn() ModelOption { return func(m *Model) { m.unsignedRun = true } }

// WithoutFencing makes the minion a module from before fencing: capabilities advertise no
// fencing, oduflow_job.fence is not available, and a fence_token is refused as a caller
// option (that module refuses every keyword it does not know).
func WithoutFencing() ModelOption { return func(m *Model) { m.noFencing = true } }

// WithFenceMark starts the minion with its fence high-water mark at mark, as one another claim store
// (or a store since restored from a backup) has already fenced: a run whose token is not above it is
// refused. Capabilities report the mark ("fencing": {"mark": N}).
func WithFenceMark(mark int64) ModelOption { return func(m *Model) { m.fenceMark = max(mark, 0) } }

// WithFenceTokenRequired is the module's switch flipped: a run without fence_token is refused
// (capabilities report fencing.token_required true).
func WithFenceTokenRequired() ModelOption { return func(m *Model) { m.tokenRequired = true } }

// WithRuntimeGuardFailure models a module whose runtime guard fails (e.g. a Salt whose code paths the
// shims do not recognise): capabilities report "runtime_guard": false with reason as
// "runtime_guard_error" and fencing not ready, as the module does, and every run is refused before any
// record ("ERROR: oduflow_job: refusing to run unprotected: " + reason, retcode 1).
func WithRuntimeGuardFailure(reason string) ModelOption {
	return func(m *Model) {
		m.guardError = reason
		m.runRefusal = "oduflow_job: refusing to run unprotected: " + reason
	}
}

// WithGuardForms sets what capabilities report as "runtime_guard_forms": for each Salt internal that
// has changed shape, the form the module's guard found (the default: Salt 3006.10+,
// 3007.2+ and the 3008 line). Use it to model a minion on an older Salt, e.g. call_parallel's
// "3006.0-3006.9, 3007.0-3007.1".
func WithGuardForms(forms map[string]string) ModelOption {
	return func(m *Model) { m.guardForms = maps.Clone(forms) }
}

// defaultGuardForms is what the module's guard reports on Salt 3006.10 and later, 3007.2 and later and
// the 3008 line: call_parallel takes inject_globals (Salt commit c4361cf828).
func defaultGuardForms() map[string]string {
	return map[string]string{"salt.state.State.call_parallel": "3006.10+, 3007.2+, 3008"}
}

// GuardFailureReasons is one runtime-guard failure per check of the module, each as oduflow_job writes
// it ("<check>: <reason>", the check names of its _GUARD_CHECKS): what WithRuntimeGuardFailure takes
// to model a minion on a Salt whose internals the module does not recognise. A test in this package
// checks each against the module's source, so the list follows the module.
func GuardFailureReasons() []string {
	return []string{
		"salt_version: Salt 3005.1 is older than 3006.0",
		"multiprocessing: multiprocessing must be True (isolated job processes are required)",
		"state_functions: unexpected signature of salt.modules.state.sls",
		"state_event: unexpected signature of salt.state.State.event",
		"call_parallel: unexpected signature of salt.state.State.call_parallel",
		"state_cache_writes: salt.modules.state.sls writes its caches in an unverified way",
		"pub_jid: load_args_and_kwargs does not inject the publication JID as __pub_jid",
		"crypto: no known crypto backend in salt.crypt",
	}
}

// WithRunRefusal makes every run refused before any record, as the module refuses (an error answer,
// "ERROR: " + refusal, retcode 1), while capabilities report everything ready: e.g. the guard's check
// of the publication's JID, which only a run can make, failing.
func WithRunRefusal(refusal string) ModelOption { return func(m *Model) { m.runRefusal = refusal } }

// WithProfileTable gives the minion a profile table of its own (the module's oduflow_profiles config):
// capabilities report its digest ("profile_table_sha256") and profiles, and run, status, fence and
// attest refuse a profile it does not hold; run refuses a publication whose profile_table differs
// from its digest (or, with a table other than the seeds', carries none). Without it (or nil) the
// minion holds the seeds' table and answers exactly as the module without the config key.
func WithProfileTable(t *profiles.Table) ModelOption {
	return func(m *Model) {
		if t != nil {
			m.table, m.tableSet = t, true
		}
	}
}

// Model is one simulated minion running the Go model of oduflow_job, with a fresh 2048-bit RSA Salt key
// (PublicKeyPEM is what the master must accept: Add does it). Safe for concurrent use.
type Model struct {
	id            string
	key           *rsa.PrivateKey
	noProof       bool
	noRunProof    bool // WithoutRunProof (or WithoutProof): run takes no proof_nonce
	unsignedRun   bool // WithUnsignedRunReturn: run takes proof_nonce but never signs
	noFencing     bool
	tokenRequired bool
	delay         time.Duration
	hold          chan struct{}
	protocol      int
	pillarReady   bool
	guardError    string            // WithRuntimeGuardFailure: the guard's failure ("" holds)
	guardForms    map[string]string // WithGuardForms: the forms the guard found
	runRefusal    string            // WithRunRefusal: the refusal every run answers
	table         *profiles.Table   // the minion's table: the seeds' unless WithProfileTable
	tableSet      bool              // WithProfileTable: the module has oduflow_profiles (capabilities say so)

	mu       sync.Mutex
	results  map[receipt.Profile]Result
	terminal map[string]receipt.Receipt // request id -> terminal receipt
	running  map[string]receipt.Receipt // request id -> running record (status running)
	jids     map[string]string          // jid index -> request id
	digests  map[string]string          // jid index -> bound state digest (custom runs)
	execBusy bool
	runs     int
	calls    map[string]int
	released bool

	fenceMark     int64 // the highest fence token started or fenced (0: none yet)
	admitted      int   // runs past the evidence and fence checks, not yet returned
	maxAdmitted   int
	fencedRefusal int // runs refused with a fenced receipt (by token or by an earlier fence call)
}

// NewModel builds a model minion with the given Salt minion id (e.g. "client-" + a UUID).
func NewModel(id string, opts ...ModelOption) *Model {
	m := &Model{id: id, protocol: 1, pillarReady: true, results: map[receipt.Profile]Result{},
		terminal: map[string]receipt.Receipt{}, running: map[string]receipt.Receipt{},
		jids: map[string]string{}, digests: map[string]string{}, calls: map[string]int{},
		guardForms: defaultGuardForms(), table: profiles.DefaultTable()}
	for _, o := range opts {
		o(m)
	}
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	m.key = k
	return m
}

// PublicKeyPEM is the minion's public key as the master stores it once accepted (PEM "PUBLIC KEY").
func (m *Model) PublicKeyPEM() []byte {
	der, _ := x509.MarshalPKIXPublicKey(&m.key.PublicKey)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// Key is the minion's private key (tests that must sign like this minion would).
func (m *Model) Key() *rsa.PrivateKey { return m.key }

// ID is the minion id.
func (m *Model) ID() string { return m.id }

// Release lets held runs finish.
func (m *Model) Release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hold != nil && !m.released {
		m.released = true
		close(m.hold)
	}
}

// Runs counts state runs actually started (after the duplicate and lock checks).
func (m *Model) Runs() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runs
}

// FenceMark is the minion's fence high-water mark: the highest token it has started or fenced
// (0 before any).
func (m *Model) FenceMark() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fenceMark
}

// MaxConcurrentRuns is the largest number of runs this minion had in flight at once past the
// evidence and fence checks (a second one is what the execution lock then refuses with failed
// 0/1). A dispatcher that never lets two runs overlap on one client keeps it at most 1.
func (m *Model) MaxConcurrentRuns() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.maxAdmitted
}

// FencedRuns counts publications of run answered with a fenced receipt (nothing ran).
func (m *Model) FencedRuns() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.fencedRefusal
}

// Calls counts handled calls by function.
func (m *Model) Calls(fun string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[fun]
}

// Receipt returns the terminal receipt of a request, if any.
func (m *Model) Receipt(request string) (receipt.Receipt, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.terminal[request]
	return r, ok
}

// Handle implements salttest.MinionHandler.
func (m *Model) Handle(ctx context.Context, job salttest.Job) (any, int) {
	m.mu.Lock()
	m.calls[job.Fun]++
	m.mu.Unlock()
	switch job.Fun {
	case "test.ping":
		return true, 0
	case "oduflow_job.capabilities":
		if m.protocol == 0 {
			return "'oduflow_job.capabilities' is not available.", 254
		}
		caps := map[string]any{"protocol": int64(m.protocol), "module": "oduflow_job",
			"pillar_ready": m.pillarReady, "runtime_guard": m.guardError == "", "runtime_guard_error": m.guardError}
		if len(m.guardForms) > 0 {
			forms := make(map[string]any, len(m.guardForms))
			for k, v := range m.guardForms {
				forms[k] = v
			}
			caps["runtime_guard_forms"] = forms
		}
		if !m.noProof {
			proof := map[string]any{"alg": receiptproof.Alg, "ready": true, "backend": "go", "error": ""}
			if !m.noRunProof {
				proof["run_return"] = true
			}
			caps["proof"] = proof
		}
		if !m.noFencing {
			caps["fencing"] = map[string]any{"version": int64(FencingVersion), "ready": m.guardError == "",
				"token_required": m.tokenRequired, "mark": m.FenceMark()}
		}
		if m.tableSet {
			ps := []any{}
			for _, p := range m.table.Profiles() {
				ps = append(ps, string(p))
			}
			caps["profiles"] = append(ps, "custom")
			caps["profile_table_sha256"] = m.table.Digest()
			caps["minion_ids"] = string(m.table.MinionIDs())
			if m.table.ValidateMinionID(m.id) != nil {
				caps["profile_table_sha256"] = ""
			}
		}
		return caps, 0
	case "oduflow_job.run":
		return m.run(ctx, job)
	case "oduflow_job.fence":
		if !m.noFencing {
			return m.fence(job)
		}
	case "oduflow_job.status":
		return m.status(job)
	case "oduflow_job.attest":
		if !m.noProof {
			return m.attest(job)
		}
	}
	return "'" + job.Fun + "' is not available.", 254
}

// holds reports whether the minion's table (the seeds' without one) holds profile, or it is custom.
func (m *Model) holds(profile string) bool {
	if profile == string(receipt.ProfileCustom) {
		return true
	}
	return m.table.Has(receipt.Profile(profile))
}

// tableRefusal is the module's refusal of a run publication's profile_table: present, it must be the
// minion's digest; absent, the minion's table must be the seeds'. "" when the run may go on.
func (m *Model) tableRefusal(job salttest.Job) string {
	t := m.table
	if t.ValidateMinionID(m.id) != nil {
		return "oduflow_job: this minion's id is outside the id policy"
	}
	v, sent := job.Kwargs["profile_table"]
	if !sent && t.IsDefault() {
		return ""
	}
	if s, ok := v.(string); !ok || s != t.Digest() {
		return "oduflow_job: the dispatcher's profile table differs from this minion's"
	}
	return ""
}

func strArg(args []any, i int) string {
	if i >= len(args) {
		return ""
	}
	s, _ := args[i].(string)
	return s
}

func (m *Model) binding(request, jid, profile string) receipt.Receipt {
	return receipt.Receipt{Protocol: 1, MinionID: m.id, RequestID: request, JID: jid,
		Profile: receipt.Profile(profile)}
}

// ReceiptValue renders a receipt as the module returns it (a mapping of the nine keys, and
// "code" for a fenced receipt).
func ReceiptValue(r receipt.Receipt) map[string]any {
	v := map[string]any{"protocol": int64(r.Protocol), "minion_id": r.MinionID, "request_id": r.RequestID,
		"jid": r.JID, "profile": string(r.Profile), "state_digest": r.StateDigest, "status": string(r.Status),
		"passed": int64(r.Passed), "total": int64(r.Total)}
	if r.Code != "" {
		v["code"] = string(r.Code)
	}
	return v
}

// FencingVersion is the version of the fencing capability the model implements (the module's
// capabilities()["fencing"]["version"]).
const FencingVersion = 1

// maxFenceToken is the largest fence token (2^53-1: exact in JSON and in a double).
const maxFenceToken = 1<<53 - 1

const invalidFenceToken = "oduflow_job: invalid fence token (an integer from 1 to 2^53-1)"

// fenceToken reads a fence token as the module does: an integer (never a bool, float or
// string) from 1 to 2^53-1. ok is false for anything else.
func fenceToken(v any) (int64, bool) {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int8:
		n = int64(x)
	case int16:
		n = int64(x)
	case int32:
		n = int64(x)
	case int64:
		n = x
	case uint8:
		n = int64(x)
	case uint16:
		n = int64(x)
	case uint32:
		n = int64(x)
	case uint64:
		if x > maxFenceToken {
			return 0, false
		}
		n = int64(x)
	case uint:
		if x > maxFenceToken {
			return 0, false
		}
		n = int64(x)
	default:
		return 0, false
	}
	return n, n >= 1 && n <= maxFenceToken
}

// runFenceToken is run's fence_token: a keyword argument, or the fourth positional argument
// (the module's signature is run(request_id, profile, state_data_json="", fence_token=None)).
// present is false when there is none; a refusal is the error text to return.
func runFenceToken(job salttest.Job) (token int64, present bool, refusal string) {
	v, ok := job.Kwargs["fence_token"]
	if !ok && len(job.Args) > 3 {
		v, ok = job.Args[3], true
	}
	if !ok || v == nil {
		return 0, false, ""
	}
	t, valid := fenceToken(v)
	if !valid {
		return 0, false, invalidFenceToken
	}
	return t, true, ""
}

func (m *Model) run(ctx context.Context, job salttest.Job) (any, int) {
	request, profile := strArg(job.Args, 0), strArg(job.Args, 1)
	if refusal := m.tableRefusal(job); refusal != "" {
		return refusal, 1 // refused before any record, like the module
	}
	if receipt.ValidateRequestID(request) != nil || receipt.ValidateJID(job.JID) != nil {
		return "oduflow_job: invalid request id or jid", 1
	}
	if !m.holds(profile) {
		return "oduflow_job: unknown profile", 1
	}
	digest, refusal := stateDigest(receipt.Profile(profile), strArg(job.Args, 2))
	if refusal != "" {
		return refusal, 1 // refused before any record, like the module: status stays not_started
	}
	if m.runRefusal != "" {
		// Salt answers a CommandExecutionError this way; nothing is recorded (status stays not_started).
		return "ERROR: " + m.runRefusal, 1
	}
	var token int64
	hasToken := false
	if m.noFencing {
		if _, ok := job.Kwargs["fence_token"]; ok {
			return "oduflow_job: caller execution options are refused", 1
		}
	} else {
		token, hasToken, refusal = runFenceToken(job)
		if refusal != "" {
			return refusal, 1
		}
		if !hasToken && m.tokenRequired {
			return "oduflow_job: a fence token is required", 1
		}
	}
	nonce, refusal := m.runNonce(job)
	if refusal != "" {
		return refusal, 1
	}
	b := m.binding(request, job.JID, profile)
	b.StateDigest = digest
	m.mu.Lock()
	if r, ok := m.terminal[request]; ok {
		m.mu.Unlock()
		fencedBlind := r.Fenced() && r.StateDigest == "" // fenced by fence(), which never knew the payload
		if r.JID != job.JID || (r.StateDigest != digest && !fencedBlind) {
			return "oduflow_job: binding conflict", 1
		}
		return m.runReturn(r, nonce)
	}
	if _, ok := m.running[request]; ok {
		m.mu.Unlock()
		b.Status = receipt.StatusRunning
		return m.runReturn(b, nonce)
	}
	if other, ok := m.jids[job.JID]; ok {
		m.mu.Unlock()
		if other == request {
			b.Status = receipt.StatusUnknown // a partial claim of this publication
			return m.runReturn(b, nonce)
		}
		return "oduflow_job: binding conflict (jid)", 1
	}
	m.jids[job.JID] = request
	m.digests[job.JID] = digest
	if hasToken && token <= m.fenceMark || !hasToken && !m.noFencing && m.fenceMark > 0 {
		// Not above the high-water mark, or no token once a mark exists (the module's legacy mode
		// fails closed): a terminal fenced receipt, nothing runs.
		b.Status, b.Code = receipt.StatusFailed, receipt.CodeFenced
		m.terminal[request] = b
		m.fencedRefusal++
		m.mu.Unlock()
		return m.runReturn(b, nonce)
	}
	m.admitted++
	m.maxAdmitted = max(m.maxAdmitted, m.admitted)
	if m.execBusy {
		b.Status, b.Total = receipt.StatusFailed, 1
		m.terminal[request] = b
		m.admitted--
		m.mu.Unlock()
		return m.runReturn(b, nonce)
	}
	if hasToken {
		m.fenceMark = token // committed with the JID index, before any state work
	}
	m.execBusy = true
	m.runs++
	rr := b
	rr.Status = receipt.StatusRunning
	m.running[request] = rr
	res, ok := m.results[receipt.Profile(profile)]
	if !ok {
		res = Result{Status: receipt.StatusSucceeded, Passed: 1, Total: 1}
	}
	hold := m.hold
	m.mu.Unlock()

	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
		}
	}
	if m.delay > 0 {
		select {
		case <-time.After(m.delay):
		case <-ctx.Done():
		}
	}
	b.Status, b.Passed, b.Total = res.Status, res.Passed, res.Total
	if res.Status == receipt.StatusUnknown {
		b.Passed, b.Total = 0, 0
	}
	m.mu.Lock()
	delete(m.running, request)
	if b.Status != receipt.StatusUnknown {
		m.terminal[request] = b
	}
	m.execBusy = false
	m.admitted--
	m.mu.Unlock()
	return m.runReturn(b, nonce)
}

// runNonce is run's proof_nonce keyword, checked as the module checks it: "" when absent; a module
// without signed run returns refuses the keyword like any caller option it does not know.
func (m *Model) runNonce(job salttest.Job) (nonce string, refusal string) {
	v, ok := job.Kwargs["proof_nonce"]
	if !ok || v == nil {
		return "", ""
	}
	if m.noProof || m.noRunProof {
		return "", "oduflow_job: caller execution options are refused"
	}
	s, _ := v.(string)
	if receiptproof.ValidateNonce(s) != nil {
		return "", "oduflow_job: invalid proof nonce (32 to 64 lowercase hex digits)"
	}
	return s, ""
}

// runReturn is what run returns for r: with a proof nonce and a terminal receipt, the receipt signed
// over it exactly as attest signs it ({receipt, alg, sig}); otherwise (no nonce, running or unknown,
// WithUnsignedRunReturn) the bare receipt.
func (m *Model) runReturn(r receipt.Receipt, nonce string) (any, int) {
	if nonce == "" || !r.Status.Terminal() || m.unsignedRun {
		return ReceiptValue(r), 0
	}
	proof, err := receiptproof.Sign(m.key, nonce, r)
	if err != nil {
		return ReceiptValue(r), 0 // the module returns its receipt unsigned when it cannot sign
	}
	proof["receipt"] = ReceiptValue(r)
	return proof, 0
}

// fence is oduflow_job.fence(request_id, jid, profile, token): raise the high-water mark to at
// least token; answer the receipt of a run that already started or finished (running, unknown or
// terminal) unchanged; otherwise commit a terminal fenced receipt for that publication so it never
// runs. Idempotent; under the same lock as run and status.
func (m *Model) fence(job salttest.Job) (any, int) {
	request, jid, profile := strArg(job.Args, 0), strArg(job.Args, 1), strArg(job.Args, 2)
	if receipt.ValidateRequestID(request) != nil || receipt.ValidateJID(jid) != nil {
		return "oduflow_job: invalid request id or jid", 1
	}
	if !m.holds(profile) {
		return "oduflow_job: unknown profile", 1
	}
	var raw any
	if len(job.Args) > 3 {
		raw = job.Args[3]
	}
	token, ok := fenceToken(raw)
	if !ok {
		return invalidFenceToken, 1
	}
	b := m.binding(request, jid, profile)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fenceMark = max(m.fenceMark, token)
	if other, bound := m.jids[jid]; bound && other != request {
		return "oduflow_job: binding conflict on request_id", 1
	}
	for _, r := range []receipt.Receipt{m.terminal[request], m.running[request]} {
		if r.RequestID == "" {
			continue
		}
		if r.JID != jid {
			return "oduflow_job: binding conflict on jid", 1
		}
		if r.Profile != b.Profile {
			return "oduflow_job: binding conflict on profile", 1
		}
		return ReceiptValue(r), 0 // started or finished: its receipt, unchanged
	}
	if _, bound := m.jids[jid]; bound {
		b.Status, b.StateDigest = receipt.StatusUnknown, m.digests[jid] // a partial claim
		return ReceiptValue(b), 0
	}
	m.jids[jid] = request
	m.digests[jid] = ""
	b.Status, b.Code = receipt.StatusFailed, receipt.CodeFenced
	m.terminal[request] = b
	return ReceiptValue(b), 0
}

// attest answers status, signed with the minion's key over the nonce (args[3]), like the module.
func (m *Model) attest(job salttest.Job) (any, int) {
	nonce := strArg(job.Args, 3)
	if receiptproof.ValidateNonce(nonce) != nil {
		return "oduflow_job: invalid nonce (32 to 64 lowercase hex digits)", 1
	}
	ans, code := m.status(job)
	v, ok := ans.(map[string]any)
	if code != 0 || !ok {
		return ans, code
	}
	r, err := receipt.FromValue(v)
	if err != nil {
		return "oduflow_job: " + err.Error(), 1
	}
	proof, err := receiptproof.Sign(m.key, nonce, r)
	if err != nil {
		return "oduflow_job: cannot sign", 1
	}
	proof["receipt"] = ReceiptValue(r)
	return proof, 0
}

func (m *Model) status(job salttest.Job) (any, int) {
	request, jid, profile := strArg(job.Args, 0), strArg(job.Args, 1), strArg(job.Args, 2)
	if receipt.ValidateRequestID(request) != nil || receipt.ValidateJID(jid) != nil {
		return "oduflow_job: invalid request id or jid", 1
	}
	if !m.holds(profile) {
		return "oduflow_job: unknown profile", 1
	}
	b := m.binding(request, jid, profile)
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.terminal[request]; ok {
		return ReceiptValue(r), 0
	}
	if r, ok := m.running[request]; ok {
		b.Status, b.StateDigest = receipt.StatusRunning, r.StateDigest
		return ReceiptValue(b), 0
	}
	if _, ok := m.jids[jid]; ok {
		b.Status, b.StateDigest = receipt.StatusUnknown, m.digests[jid]
		return ReceiptValue(b), 0
	}
	b.Status = receipt.StatusNotStarted
	return ReceiptValue(b), 0
}

// stateDigest checks state_data_json the way the module does and returns the digest to bind: "" for the
// fixed profiles (whose state data must be empty); for custom, exactly {"digest","high"} where digest is
// the SHA-256 of the canonical JSON of high (a non-empty mapping). A refusal is the error text to return.
func stateDigest(p receipt.Profile, data string) (string, string) {
	if p != receipt.ProfileCustom {
		if data != "" {
			return "", "oduflow_job: state_data_json must be empty for fixed profiles"
		}
		return "", ""
	}
	if data == "" {
		return "", "oduflow_job: custom requires state_data_json"
	}
	dec := json.NewDecoder(strings.NewReader(data))
	dec.UseNumber()
	var payload map[string]any
	if err := dec.Decode(&payload); err != nil || dec.More() {
		return "", "oduflow_job: state_data_json is not valid JSON"
	}
	digest, _ := payload["digest"].(string)
	high, isMap := payload["high"].(map[string]any)
	if len(payload) != 2 || !isMap || len(high) == 0 {
		return "", "oduflow_job: state_data_json must hold exactly digest and high"
	}
	if !isDigest(digest) {
		return "", "oduflow_job: invalid state digest"
	}
	highJSON, err := receipt.CanonicalJSON(high)
	if err != nil {
		return "", "oduflow_job: high data has no canonical JSON form"
	}
	if actual := receipt.Digest(highJSON); actual != digest {
		return "", "oduflow_job: state digest mismatch"
	}
	return digest, ""
}

func isDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}
