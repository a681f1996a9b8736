package oduflow

import (
	"context"
	"strings"
	"time"
	"unicode"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	receiptproof "github.com/oduflow/oduflow-go/receipt/proof"
	"github.com/oduflow/oduflow-go/salt"
)

// Ping checks that the exact accepted client is reachable: test.ping to that minion alone (list target),
// then oduflow_job.capabilities (Proof also needs the key the master accepted, read from the pki dir). A minion the master does not match (key not accepted, or unknown) is
// reported as KeyAccepted=false, not as an error; transport and authentication failures are errors.
func (d *Dispatcher) Ping(ctx context.Context, minion string) (_ *Readiness, err error) {
	defer errmark.Boundary(&err)
	if err := d.table.ValidateMinionID(minion); err != nil {
		return nil, invalid(err, "minion id")
	}
	r := &Readiness{}
	jr, err := d.call(ctx, minion, funPing, nil, d.timers.CallTimeout)
	switch {
	case err == nil:
		r.KeyAccepted = true
		r.Reachable = jr.Return == true
	case errors.Is(err, salt.ErrNoMinions):
		return r, nil
	case errors.Is(err, errNoReturn):
		r.KeyAccepted = true
		return r, nil
	case errors.Is(err, errEventBus):
		return nil, err // "oduflow: subscribe to event bus: ..." says it all, once (ErrNotReady)
	default:
		return nil, errors.Wrap(err, "oduflow: ping")
	}
	if !r.Reachable {
		return r, nil
	}
	caps, err := d.capabilities(ctx, minion)
	switch {
	case err == nil:
		r.Protocol, r.PillarReady, r.Fencing, r.RuntimeGuard = caps.Protocol, caps.PillarReady, caps.Fencing, caps.RuntimeGuard
		if caps.FenceExhausted {
			r.Fencing, r.FencingError = false, fenceExhaustedReason
		}
		if !caps.RuntimeGuard {
			r.RuntimeGuardError = caps.GuardError
		}
		r.RuntimeGuardForms = caps.GuardForms
		r.ProfileTable = d.sameTable(caps)
		if caps.Proof {
			_, kerr := loadMinionKey(ctx, d.pkiDir, minion)
			r.Proof = kerr == nil
		}
	case errors.Is(err, errNoReturn):
	case errors.Is(err, errEventBus):
		return nil, err
	default:
		return nil, errors.Wrap(err, "oduflow: capabilities")
	}
	return r, nil
}

// Readiness is the typed result of Ping.
type Readiness struct {
	// KeyAccepted: the master matched the exact minion id (its key is accepted).
	KeyAccepted bool `json:"key_accepted"`
	// Reachable: the minion answered test.ping.
	Reachable bool `json:"reachable"`
	// Protocol reported by oduflow_job.capabilities (0 when unknown or absent).
	Protocol int `json:"protocol"`
	// PillarReady: the minion reports its full pillar ready.
	PillarReady bool `json:"pillar_ready"`
	// Proof: the minion advertises receipt proofs (rsa-pkcs1v15-sha256) and the master's pki dir holds
	// its accepted key, so its receipts can be verified.
	Proof bool `json:"proof"`
	// Fencing: the minion advertises fencing tokens (version 1, ready): it refuses a run whose token is
	// not above the highest it has started or fenced, and answers oduflow_job.fence.
	Fencing bool `json:"fencing"`
	// RuntimeGuard: the minion module's runtime guard holds (what the module's shims rely on in this
	// Salt: signatures, code paths, JID injection, job process, signing). Without it the module refuses
	// every run ("refusing to run unprotected"), so a new request would only fail.
	RuntimeGuard bool `json:"runtime_guard"`
	// RuntimeGuardError is the module's own reason when its runtime guard fails ("<check>: <reason>",
	// e.g. "call_parallel: unexpected signature of salt.state.State.call_parallel"), so an operator sees
	// why without running the salt CLI; empty while the guard holds or when the module did not say.
	RuntimeGuardError string `json:"runtime_guard_error,omitempty"`
	// RuntimeGuardForms names, for each Salt internal that has changed shape across the supported
	// releases, the form the guard found (e.g. "salt.state.State.call_parallel": "3006.10+, 3007.2+,
	// 3008"): which of Salt's histories this minion runs. Empty when the module did not report it.
	RuntimeGuardForms map[string]string `json:"runtime_guard_forms,omitempty"`
	// FencingError says why Fencing is false when the minion advertises fencing but it cannot serve a
	// new request: its fence counter cannot advance (the mark is at MaxFenceToken; a start fails
	// fence_exhausted). Empty otherwise.
	FencingError string `json:"fencing_error,omitempty"`
	// ProfileTable: the minion's profile table has the dispatcher's digest (WithProfiles; a minion
	// without a table holds the seeds' one). Without it a new request fails profile_table_mismatch.
	ProfileTable bool `json:"profile_table"`
}

// fenceExhaustedReason is Readiness.FencingError for a mark at MaxFenceToken.
const fenceExhaustedReason = "fence counter exhausted: the minion's mark is at 2^53-1, no token can be issued above it"

// Ready reports whether a new request can be dispatched to the minion: every capability a new request
// needs is present (protocol 1, pillar ready, receipt proofs with the accepted key, fencing, the runtime
// guard, the same profile table).
func (r Readiness) Ready() bool {
	return r.KeyAccepted && r.Reachable && r.Protocol == protocolVersion && r.PillarReady && r.Proof && r.Fencing &&
		r.RuntimeGuard && r.ProfileTable
}

// protocolVersion is the minion protocol this dispatcher requires.
const protocolVersion = 1

// minionCaps is what oduflow_job.capabilities reported (all zero when unknown).
type minionCaps struct {
	Protocol    int
	PillarReady bool
	// Proof: the minion advertises receipt proofs with receiptproof.Alg and can sign (its key loads).
	Proof bool
	// RunProof: with Proof, the module takes oduflow_job.run's proof_nonce and signs the run's terminal
	// receipt in its own return ("proof": {"run_return": true}). A module without it refuses the keyword
	// (it refuses every caller option it does not know), so the run carries a nonce only when set.
	RunProof bool
	// Fencing: the minion advertises fencing (version fencingVersion, ready).
	Fencing bool
	// FenceMark: the minion's fence high-water mark ("mark": the highest token it has started or fenced;
	// 0 when not reported). The intent asks the store for a token above it.
	FenceMark uint64
	// FenceExhausted: the reported mark is MaxFenceToken, above which no token exists.
	FenceExhausted bool
	// RuntimeGuard: the module reports its runtime guard holding ("runtime_guard": true).
	RuntimeGuard bool
	// GuardError: the module's "runtime_guard_error" (bounded, printable) when the guard fails.
	GuardError string
	// GuardForms: the module's "runtime_guard_forms" (internal -> the form found), bounded and printable.
	GuardForms map[string]string
	// ProfileTable: the digest of the minion's profile table ("profile_table_sha256"); a module that does
	// not report one holds the seeds' table (profiles.DefaultTable), and "" is a table it could not read.
	ProfileTable string
}

// fencingVersion is the version of the minion's fencing capability this dispatcher requires.
const fencingVersion = 1

// capabilities calls oduflow_job.capabilities on the minion. Its answer is not signed: a forged one can
// only make a preflight fail (no protocol, no proof), never make a request succeed, since every final
// result needs a verified proof.
func (d *Dispatcher) capabilities(ctx context.Context, minion string) (minionCaps, error) {
	t0 := time.Now()
	defer func() { d.hooks.observe(ctx, "capabilities", time.Since(t0)) }()
	timeout := d.timers.CallTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = time.Until(dl)
	}
	jr, err := d.batchedCall(ctx, minion, timeout)
	if errors.Is(err, errCallGap) {
		jr, err = d.call(ctx, minion, funCapabilities, nil, timeout) // the batch's events had a gap: alone
	}
	if err != nil {
		d.forgetCaps(minion)
		return minionCaps{}, err
	}
	caps := parseCapabilities(jr.Return)
	d.keepCaps(minion, caps, d.clock.Now().Add(-time.Since(t0))) // its age counts from the question
	return caps, nil
}

// parseCapabilities reads {"protocol": 1, "pillar_ready": true, "proof": {"alg": ..., "ready": true},
// ...} tolerantly; anything else is zero. A proof with another algorithm is no proof (no fallback).
func parseCapabilities(v any) minionCaps {
	m, ok := v.(map[string]any)
	if !ok {
		return minionCaps{}
	}
	var caps minionCaps
	caps.Protocol = intValue(m["protocol"])
	caps.PillarReady, _ = m["pillar_ready"].(bool)
	caps.RuntimeGuard, _ = m["runtime_guard"].(bool)
	if !caps.RuntimeGuard {
		reason, _ := m["runtime_guard_error"].(string)
		caps.GuardError = guardReason(reason)
	}
	caps.GuardForms = guardForms(m["runtime_guard_forms"])
	caps.ProfileTable = profileTableUnreported
	if v, ok := m["profile_table_sha256"]; ok {
		caps.ProfileTable, _ = v.(string)
	}
	if pm, ok := m["proof"].(map[string]any); ok {
		alg, _ := pm["alg"].(string)
		ready, _ := pm["ready"].(bool)
		caps.Proof = alg == receiptproof.Alg && ready
		runReturn, _ := pm["run_return"].(bool)
		caps.RunProof = caps.Proof && runReturn
	}
	if fm, ok := m["fencing"].(map[string]any); ok {
		// A mark at MaxFenceToken is exhausted whether the module says ready or not (this module
		// reports it not ready, "error": "exhausted"; earlier ones ready).
		ready, _ := fm["ready"].(bool)
		caps.Fencing = ready && intValue(fm["version"]) == fencingVersion
		caps.FenceMark = fenceMarkValue(fm["mark"])
		caps.FenceExhausted = caps.FenceMark == claims.MaxFenceToken
	}
	return caps
}

// profileTableUnreported is minionCaps.ProfileTable for a module that reports no table: it holds the
// seeds' one (see sameTable). It is no digest, so it can never equal one by accident.
const profileTableUnreported = "unreported"

// sameTable reports whether the minion holds the dispatcher's profile table: the digest it reports, or,
// when it reports none, the seeds' table (a module without oduflow_profiles, or from before tables).
func (d *Dispatcher) sameTable(caps minionCaps) bool {
	if caps.ProfileTable == profileTableUnreported {
		return d.table.IsDefault()
	}
	return caps.ProfileTable == d.table.Digest()
}

// maxGuardReason bounds the module's guard reason as reported (the module's reasons are one short line).
const maxGuardReason = 240

// guardReason keeps the module's reason printable and bounded: it reaches logs, errors and an operator's
// terminal, and the capability answer is not signed (a forged one could carry anything).
func guardReason(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= maxGuardReason {
			b.WriteString("...")
			break
		}
		if r < 0x20 || r == 0x7f || !unicode.IsPrint(r) {
			r = '?'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// maxGuardForms bounds how many internals' forms a capabilities answer may name (the module names one
// today, call_parallel); the answer is unsigned, so a hostile one cannot grow a Readiness without bound.
const maxGuardForms = 16

// guardForms reads "runtime_guard_forms": a map of the internal's dotted name to the form's label, each
// bounded and printable as guardReason makes them; nil for anything else or an empty map.
func guardForms(v any) map[string]string {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return nil
	}
	forms := make(map[string]string, min(len(m), maxGuardForms))
	for k, lv := range m {
		label, ok := lv.(string)
		if !ok {
			continue
		}
		if len(forms) == maxGuardForms {
			break
		}
		forms[guardReason(k)] = guardReason(label)
	}
	if len(forms) == 0 {
		return nil
	}
	return forms
}

// fenceMarkValue reads the reported mark: an integer from 0 to MaxFenceToken, else 0 (a value out of
// range is not a mark this module writes; the store's own counter then decides, as before floors).
func fenceMarkValue(v any) uint64 {
	n, ok := wholeNumber(v)
	if !ok || n > claims.MaxFenceToken {
		return 0
	}
	return n
}

// intValue reads a small integer of a decoded return (msgpack or JSON numbers); 0 for anything else.
func intValue(v any) int {
	n, ok := wholeNumber(v)
	if !ok || n > 1<<31 {
		return 0
	}
	return int(n)
}

// wholeNumber reads a non-negative integer of a decoded return, as msgpack or JSON decode it.
func wholeNumber(v any) (uint64, bool) {
	switch p := v.(type) {
	case int64:
		return uint64(p), p >= 0
	case int:
		return uint64(p), p >= 0
	case uint64:
		return p, true
	case float64:
		return uint64(p), p >= 0 && p == float64(uint64(p))
	}
	return 0, false
}
