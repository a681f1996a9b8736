package oduflow

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

const (
	ruleDef   = "d0000000-0000-4000-8000-000000000001"
	ruleOther = "d0000000-0000-4000-8000-000000000002"
	digestA   = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB   = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

var ruleT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func cstRec(id, def, digest string, st receipt.Status, by catalog.Confirmation, dispatched bool, at int) customRecord {
	return customRecord{RequestID: id, DefinitionID: def, Digest: digest, Status: st, Confirmation: by,
		Dispatched: dispatched, CreatedAt: ruleT0.Add(time.Duration(at) * time.Minute)}
}

var (
	configured   = []customConfigRecord{{Status: receipt.StatusSucceeded, Confirmation: catalog.ConfirmedByMinionReceipt}}
	legacyConfig = []customConfigRecord{{Status: receipt.StatusSucceeded, Legacy: true}}
)

const (
	apply = catalog.ModeApply
	again = catalog.ModeApplyAgain
	ok    = receipt.StatusSucceeded
	fail  = receipt.StatusFailed
	run   = receipt.StatusRunning
	queue = receipt.StatusNotStarted
	unk   = receipt.StatusUnknown
	byRx  = catalog.ConfirmedByMinionReceipt
	byMR  = catalog.ConfirmedByMasterRecord
	byOp  = catalog.ConfirmedByOperatorAssertion
	byNo  = catalog.Confirmation("")
)

func TestDecideCustomScenarios(t *testing.T) {
	cases := []struct {
		name    string
		mode    customMode
		digest  string
		config  []customConfigRecord
		hist    []customRecord
		kind    customDecisionKind
		reuse   string // request id returned for reuse
		wantErr error
	}{
		{name: "first apply", mode: apply, digest: digestA, config: configured, kind: customNew},
		{name: "first apply, legacy configuration", mode: apply, digest: digestA, config: legacyConfig, kind: customNew},
		{name: "first apply, no configuration", mode: apply, digest: digestA, wantErr: ErrInitialConfigurationMissing},
		{name: "first apply, asserted configuration", mode: apply, digest: digestA,
			config:  []customConfigRecord{{Status: ok, Confirmation: byOp}},
			wantErr: ErrInitialConfigurationMissing},
		{name: "first apply, asserted legacy configuration", mode: apply, digest: digestA,
			config:  []customConfigRecord{{Status: ok, Confirmation: byOp, Legacy: true}},
			wantErr: ErrInitialConfigurationMissing},
		{name: "first apply, failed configuration", mode: apply, digest: digestA,
			config:  []customConfigRecord{{Status: fail, Confirmation: byRx}, {Status: unk}, {Status: run}},
			wantErr: ErrInitialConfigurationMissing},
		{name: "first apply, preflight-succeeded cannot exist but master record is not a receipt", mode: apply,
			digest: digestA, config: []customConfigRecord{{Status: ok, Confirmation: byMR}},
			wantErr: ErrInitialConfigurationMissing},
		{name: "configuration failed then succeeded", mode: apply, digest: digestA, kind: customNew,
			config: []customConfigRecord{{Status: fail, Confirmation: byRx}, {Status: ok, Confirmation: byRx}}},
		{name: "apply again without history", mode: again, digest: digestA, config: configured,
			wantErr: ErrApplyAgainWithoutTerminal},
		{name: "apply again: only other definitions ran", mode: again, digest: digestA, config: configured,
			hist: []customRecord{cstRec("o1", ruleOther, digestA, ok, byRx, true, 1)}, wantErr: ErrApplyAgainWithoutTerminal},
		{name: "repeated apply reuses running", mode: apply, digest: digestA, config: configured,
			hist: []customRecord{cstRec("r1", ruleDef, digestA, run, byNo, true, 1)}, kind: customReuseRunning, reuse: "r1"},
		{name: "repeated apply reuses queued", mode: apply, digest: digestA, config: configured,
			hist: []customRecord{cstRec("q1", ruleDef, digestA, queue, byNo, false, 1)}, kind: customReuseRunning, reuse: "q1"},
		{name: "apply again while running reuses it", mode: again, digest: digestA, config: configured,
			hist: []customRecord{cstRec("r1", ruleDef, digestA, run, byNo, false, 1)}, kind: customReuseRunning, reuse: "r1"},
		{name: "running of an older revision is still reused", mode: apply, digest: digestB, config: configured,
			hist: []customRecord{cstRec("r1", ruleDef, digestA, run, byNo, true, 1)}, kind: customReuseRunning, reuse: "r1"},
		{name: "reuse running needs no configuration", mode: apply, digest: digestA,
			hist: []customRecord{cstRec("r1", ruleDef, digestA, run, byNo, true, 1)}, kind: customReuseRunning, reuse: "r1"},
		{name: "reuse running even with an unknown elsewhere", mode: apply, digest: digestA, config: configured,
			hist: []customRecord{cstRec("u1", ruleOther, digestB, unk, byNo, true, 1), cstRec("r1", ruleDef, digestA, run, byNo, true, 2)},
			kind: customReuseRunning, reuse: "r1"},
		{name: "running of another definition does not block", mode: apply, digest: digestA, config: configured,
			hist: []customRecord{cstRec("o1", ruleOther, digestA, run, byNo, true, 1)}, kind: customNew},
		{name: "identical digest succeeded by receipt is reused", mode: apply, digest: digestA, config: configured,
			hist: []customRecord{cstRec("s1", ruleDef, digestA, ok, byRx, true, 1)}, kind: customReuseSucceeded, reuse: "s1"},
		{name: "reuse succeeded needs no current configuration evidence", mode: apply, digest: digestA,
			hist: []customRecord{cstRec("s1", ruleDef, digestA, ok, byRx, true, 1)}, kind: customReuseSucceeded, reuse: "s1"},
		{name: "asserted success is not reused", mode: apply, digest: digestA, config: configured,
			hist: []customRecord{cstRec("s1", ruleDef, digestA, ok, byOp, true, 1)}, kind: customNew},
		{name: "identical digest of another definition is not reused", mode: apply, digest: digestA, config: configured,
			hist: []customRecord{cstRec("o1", ruleOther, digestA, ok, byRx, true, 1)}, kind: customNew},
		{name: "edited definition runs again", mode: apply, digest: digestB, config: configured,
			hist: []customRecord{cstRec("s1", ruleDef, digestA, ok, byRx, true, 1)}, kind: customNew},
		{name: "reverted definition after another digest ran runs again", mode: apply, digest: digestA, config: configured,
			hist: []customRecord{cstRec("s1", ruleDef, digestA, ok, byRx, true, 1), cstRec("s2", ruleDef, digestB, ok, byRx, true, 2)},
			kind: customNew},
		{name: "latest identical success reused over older ones", mode: apply, digest: digestA, config: configured,
			hist: []customRecord{cstRec("s1", ruleDef, digestA, ok, byRx, true, 1), cstRec("s2", ruleDef, digestA, ok, byRx, true, 2)},
			kind: customReuseSucceeded, reuse: "s2"},
		{name: "apply again after success", mode: again, digest: digestA, config: configured,
			hist: []customRecord{cstRec("s1", ruleDef, digestA, ok, byRx, true, 1)}, kind: customNew},
		{name: "apply again after asserted success", mode: again, digest: digestA, config: configured,
			hist: []customRecord{cstRec("s1", ruleDef, digestA, ok, byOp, true, 1)}, kind: customNew},
		{name: "apply again needs configuration", mode: again, digest: digestA,
			hist: []customRecord{cstRec("s1", ruleDef, digestA, ok, byRx, true, 1)}, wantErr: ErrInitialConfigurationMissing},
		{name: "failure confirmed by receipt: apply runs again", mode: apply, digest: digestA, config: configured,
			hist: []customRecord{cstRec("f1", ruleDef, digestA, fail, byRx, true, 1)}, kind: customNew},
		{name: "failure confirmed by receipt: apply again", mode: again, digest: digestA, config: configured,
			hist: []customRecord{cstRec("f1", ruleDef, digestA, fail, byRx, true, 1)}, kind: customNew},
		{name: "preflight failure confirmed by the master", mode: apply, digest: digestA, config: configured,
			hist: []customRecord{cstRec("p1", ruleDef, digestA, fail, byMR, false, 1)}, kind: customNew},
		{name: "refused publish confirmed by the master", mode: again, digest: digestA, config: configured,
			hist: []customRecord{cstRec("p1", ruleDef, digestA, fail, byMR, true, 1)}, kind: customNew},
		{name: "asserted failure needs the receipt", mode: apply, digest: digestA, config: configured,
			hist: []customRecord{cstRec("f1", ruleDef, digestA, fail, byOp, true, 1)}, wantErr: ErrNeedsConfirmation},
		{name: "unconfirmed failure needs the receipt", mode: again, digest: digestA, config: configured,
			hist: []customRecord{cstRec("f1", ruleDef, digestA, fail, byNo, true, 1)}, wantErr: ErrNeedsConfirmation},
		{name: "success after a failure clears it", mode: apply, digest: digestA, config: configured,
			hist: []customRecord{cstRec("f1", ruleDef, digestA, fail, byOp, true, 1), cstRec("s1", ruleDef, digestA, ok, byRx, true, 2)},
			kind: customReuseSucceeded, reuse: "s1"},
		{name: "failure after a success is not hidden by reuse", mode: apply, digest: digestA, config: configured,
			hist:    []customRecord{cstRec("s1", ruleDef, digestA, ok, byRx, true, 1), cstRec("f1", ruleDef, digestA, fail, byNo, true, 2)},
			wantErr: ErrNeedsConfirmation},
		{name: "confirmed failure after a success runs again", mode: apply, digest: digestA, config: configured,
			hist: []customRecord{cstRec("s1", ruleDef, digestA, ok, byRx, true, 1), cstRec("f1", ruleDef, digestA, fail, byRx, true, 2)},
			kind: customNew},
		{name: "unconfirmed failure of another definition does not block", mode: apply, digest: digestA,
			config: configured, hist: []customRecord{cstRec("f1", ruleOther, digestA, fail, byOp, true, 1)}, kind: customNew},
		{name: "unknown blocks apply", mode: apply, digest: digestA, config: configured,
			hist: []customRecord{cstRec("u1", ruleDef, digestA, unk, byNo, true, 1)}, wantErr: ErrUncertain},
		{name: "unknown of another definition blocks", mode: apply, digest: digestA, config: configured,
			hist: []customRecord{cstRec("u1", ruleOther, digestB, unk, byNo, true, 1)}, wantErr: ErrUncertain},
		{name: "unknown blocks reuse of an old success", mode: apply, digest: digestA, config: configured,
			hist:    []customRecord{cstRec("s1", ruleDef, digestA, ok, byRx, true, 1), cstRec("u1", ruleOther, digestB, unk, byNo, true, 2)},
			wantErr: ErrUncertain},
		{name: "unknown blocks apply again", mode: again, digest: digestA, config: configured,
			hist: []customRecord{cstRec("u1", ruleDef, digestA, unk, byNo, false, 1)}, wantErr: ErrUncertain},
		{name: "unknown beats missing configuration", mode: apply, digest: digestA,
			hist: []customRecord{cstRec("u1", ruleOther, digestA, unk, byNo, true, 1)}, wantErr: ErrUncertain},
		{name: "an unrecognised status is uncertain", mode: apply, digest: digestA, config: configured,
			hist: []customRecord{cstRec("x1", ruleOther, digestA, "paused", byNo, true, 1)}, wantErr: ErrUncertain},
		{name: "unknown resolved by reconciliation no longer blocks", mode: apply, digest: digestA, config: configured,
			hist: []customRecord{cstRec("u1", ruleDef, digestA, ok, byRx, true, 1)}, kind: customReuseSucceeded, reuse: "u1"},
		{name: "unknown asserted failed still needs the receipt", mode: apply, digest: digestA, config: configured,
			hist: []customRecord{cstRec("u1", ruleDef, digestA, fail, byOp, true, 1)}, wantErr: ErrNeedsConfirmation},
		{name: "invalid mode", mode: "apply_twice", digest: digestA, config: configured, wantErr: claims.ErrInvalidInput},
		{name: "no digest", mode: apply, config: configured, wantErr: claims.ErrInvalidInput},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Every permutation of the history gives the same decision (it is sorted by creation time).
			for p := range 4 {
				hist := append([]customRecord(nil), tc.hist...)
				r := rand.New(rand.NewPCG(uint64(p), 7))
				r.Shuffle(len(hist), func(i, j int) { hist[i], hist[j] = hist[j], hist[i] })
				got, err := decideCustom(customRequest{Mode: tc.mode, DefinitionID: ruleDef, Digest: tc.digest,
					Configure: tc.config, History: hist})
				if tc.wantErr != nil {
					if !errors.Is(err, tc.wantErr) {
						t.Fatalf("err %v, want %v (decision %v)", err, tc.wantErr, got.Kind)
					}
					return
				}
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				if got.Kind != tc.kind || got.Execution.RequestID != tc.reuse {
					t.Fatalf("got %v %q, want %v %q", got.Kind, got.Execution.RequestID, tc.kind, tc.reuse)
				}
			}
		})
	}
}

func TestDecideCustomTypedErrors(t *testing.T) {
	_, err := decideCustom(customRequest{Mode: apply, DefinitionID: ruleDef, Digest: digestA, Configure: configured,
		History: []customRecord{cstRec("f1", ruleDef, digestA, fail, byOp, true, 1)}})
	var nc *NeedsConfirmationError
	if !errors.As(err, &nc) || nc.RequestID != "f1" || !nc.Dispatched {
		t.Fatalf("needs confirmation: %v", err)
	}
	_, err = decideCustom(customRequest{Mode: apply, DefinitionID: ruleDef, Digest: digestA, Configure: configured,
		History: []customRecord{cstRec("u1", ruleOther, digestA, unk, byNo, true, 1)}})
	var ue *UncertainError
	if !errors.As(err, &ue) || ue.RequestID != "u1" {
		t.Fatalf("uncertain: %v", err)
	}
}

// TestDecideCustomExhaustive enumerates every combination of: mode, configuration evidence, and up to two
// earlier executions of the definition plus one of another definition (each in every status,
// confirmation, dispatch flag and digest), and checks the decision against an independent statement of
// the custom execution rules, plus the safety properties that must hold whatever the ordering of the rules.
func TestDecideCustomExhaustive(t *testing.T) {
	statuses := []receipt.Status{queue, run, ok, fail, unk}
	confs := []catalog.Confirmation{byNo, byRx, byMR, byOp}
	var singles []customRecord
	for _, st := range statuses {
		for _, by := range confs {
			if !st.Terminal() && by != byNo {
				continue // only terminal outcomes are confirmed
			}
			for _, dig := range []string{digestA, digestB} {
				for _, disp := range []bool{false, true} {
					singles = append(singles, customRecord{Digest: dig, Status: st, Confirmation: by, Dispatched: disp})
				}
			}
		}
	}
	configs := [][]customConfigRecord{nil, configured, legacyConfig,
		{{Status: ok, Confirmation: byOp}}, {{Status: fail, Confirmation: byRx}}, {{Status: unk}}}
	n := 0
	for _, mode := range []customMode{apply, again} {
		for ci, cfg := range configs {
			configOK := ci == 1 || ci == 2
			for _, hist := range histories(singles) {
				n++
				req := customRequest{Mode: mode, DefinitionID: ruleDef, Digest: digestA, Configure: cfg, History: hist}
				got, err := decideCustom(req)
				checkProperties(t, req, configOK, got, err)
			}
		}
	}
	if n < 10000 {
		t.Fatalf("only %d combinations", n)
	}
	t.Logf("%d combinations", n)
}

// histories: none; one record of the definition; two of the definition; and each of those plus one
// record of another definition (created last).
func histories(singles []customRecord) [][]customRecord {
	var own [][]customRecord
	own = append(own, nil)
	for i, a := range singles {
		a.RequestID, a.DefinitionID, a.CreatedAt = fmt.Sprintf("a%03d", i), ruleDef, ruleT0.Add(time.Minute)
		own = append(own, []customRecord{a})
		for j, b := range singles {
			b.RequestID, b.DefinitionID, b.CreatedAt = fmt.Sprintf("b%03d", j), ruleDef, ruleT0.Add(2*time.Minute)
			own = append(own, []customRecord{a, b})
		}
	}
	out := append([][]customRecord(nil), own...)
	for _, o := range []customRecord{
		{Status: unk}, {Status: run}, {Status: fail, Confirmation: byOp}, {Status: ok, Confirmation: byRx, Digest: digestA}} {
		o.RequestID, o.DefinitionID, o.CreatedAt = "other", ruleOther, ruleT0.Add(3*time.Minute)
		for _, h := range own[:1+len(singles)] { // none or one own record, to keep the run short
			out = append(out, append(append([]customRecord(nil), h...), o))
		}
	}
	return out
}

func checkProperties(t *testing.T, req customRequest, configOK bool, got customDecision, err error) {
	t.Helper()
	fatal := func(msg string) {
		t.Helper()
		t.Fatalf("%s: mode=%s config=%v history=%+v -> %v %+v err=%v", msg, req.Mode, req.Configure, req.History,
			got.Kind, got.Execution, err)
	}
	var active, lastOwn *customRecord
	uncertain := false
	for i := range req.History {
		r := &req.History[i]
		if r.DefinitionID == ruleDef && (r.Status == queue || r.Status == run) {
			active = r // records of the definition are created in slice order
		}
		if r.Status == unk {
			uncertain = true
		}
		if r.DefinitionID == ruleDef && r.Status.Terminal() {
			lastOwn = r
		}
	}
	// The rules, stated independently.
	switch {
	case active != nil:
		if err != nil || got.Kind != customReuseRunning || got.Execution.RequestID != active.RequestID {
			fatal("a queued or running execution of the definition must be reused")
		}
		return
	case uncertain:
		if !errors.Is(err, ErrUncertain) {
			fatal("an unknown custom execution must block")
		}
		return
	case req.Mode == again && lastOwn == nil:
		if !errors.Is(err, ErrApplyAgainWithoutTerminal) {
			fatal("apply again needs a terminal result")
		}
		return
	case lastOwn != nil && lastOwn.Status == fail && lastOwn.Confirmation != byRx && lastOwn.Confirmation != byMR:
		if !errors.Is(err, ErrNeedsConfirmation) {
			fatal("an unconfirmed failure must be confirmed first")
		}
		return
	case req.Mode == apply && lastOwn != nil && lastOwn.Status == ok && lastOwn.Confirmation == byRx &&
		lastOwn.Digest == req.Digest:
		if err != nil || got.Kind != customReuseSucceeded || got.Execution.RequestID != lastOwn.RequestID {
			fatal("an identical receipted success must be reused")
		}
		return
	case !configOK:
		if !errors.Is(err, ErrInitialConfigurationMissing) {
			fatal("a new execution needs the initial configuration")
		}
		return
	}
	if err != nil || got.Kind != customNew {
		fatal("expected a new execution")
	}
	// Safety properties, redundant with the above on purpose.
	if got.Kind == customReuseSucceeded && (got.Execution.Confirmation != byRx || req.Mode != apply) {
		fatal("reuse of an unreceipted success or under apply again")
	}
}
