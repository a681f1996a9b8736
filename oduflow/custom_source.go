package oduflow

import (
	"context"
	"strings"

	"github.com/oduflow/oduflow-go/internal/errmark"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/oduflow/catalog"
	"github.com/oduflow/oduflow-go/oduflow/claims"
	"github.com/oduflow/oduflow-go/receipt"
)

// errCustomDisabled: CustomStart/CustomStatus on a Dispatcher built without WithCustomCatalog.
var errCustomDisabled = errmark.Mark(errors.New("oduflow: custom executions need WithCustomCatalog"), ErrNotReady)

// errDefinitionMismatch: the request id is already bound to a custom execution of another definition.
var errDefinitionMismatch = errmark.Mark(errors.New("oduflow: request bound to another definition"), ErrMismatch)

// customPublications serves the fixed profiles like the default source, and custom claims from their
// frozen snapshot, bound by the digest recorded in the claim.
type customPublications struct {
	store catalog.Store
}

// Publication implements publicationSource.
func (p *customPublications) Publication(ctx context.Context, c *claims.Claim) (publicationSpec, error) {
	if c.EffectiveProfile() != receipt.ProfileCustom {
		return fixedPublications{}.Publication(ctx, c)
	}
	if c.PayloadRef != c.RequestID || c.StateDigest == "" {
		return publicationSpec{}, errors.New("oduflow: custom claim without its payload reference")
	}
	e, err := p.store.Execution(ctx, c.PayloadRef)
	if err != nil {
		return publicationSpec{}, errors.Wrap(err, "oduflow: custom payload")
	}
	if e.MinionID != c.MinionID || e.Digest != c.StateDigest || receipt.Digest(e.Canonical) != c.StateDigest {
		return publicationSpec{}, errors.New("oduflow: custom payload does not match the claim's digest")
	}
	return publicationSpec{StateDataJSON: stateDataJSON(c.StateDigest, e.Canonical)}, nil
}

// stateDataJSON builds the state_data_json argument of oduflow_job.run for a custom execution: the JSON
// text {"digest":"<sha256 hex>","high":<high data>}, canonical (RFC 8785) when canonicalHigh is the
// canonical JSON of the high data (keys "digest" < "high" are in order, no whitespace). The minion module
// recomputes the digest of "high" and refuses a mismatch.
func stateDataJSON(digest string, canonicalHigh []byte) string {
	var b strings.Builder
	b.Grow(len(canonicalHigh) + len(digest) + 24)
	b.WriteString(`{"digest":"`)
	b.WriteString(digest)
	b.WriteString(`","high":`)
	b.Write(canonicalHigh)
	b.WriteString(`}`)
	return b.String()
}

func (d *Dispatcher) customCatalog() (catalog.Store, error) {
	p, ok := d.pubsrc.(*customPublications)
	if !ok || p.store == nil {
		return nil, errCustomDisabled
	}
	return p.store, nil
}

// claimConfirmation says what established a final claim's outcome.
func claimConfirmation(c *claims.Claim) catalog.Confirmation {
	if c.Phase == claims.PhaseAsserted || c.Evidence == evidenceAsserted {
		return catalog.ConfirmedByOperatorAssertion
	}
	if !c.Phase.Final() || !c.Status.Terminal() {
		return ""
	}
	switch c.Evidence {
	case evidenceReceipt, evidenceReconciled, evidenceFenced: // fenced: the minion signed that it never ran
		return catalog.ConfirmedByMinionReceipt
	case evidencePreflight, evidenceRefused:
		return catalog.ConfirmedByMasterRecord
	}
	return ""
}

// outcomeOf is the sanitized catalog outcome of a claim whose current status is st.
func outcomeOf(c *claims.Claim, st receipt.Status) catalog.Outcome {
	o := catalog.Outcome{Status: st, Dispatched: c.WasDispatched()}
	if c.Phase.Final() {
		o.Passed, o.Total, o.ErrorCode = c.Passed, c.Total, string(c.ErrorCode)
		o.ConfirmedBy = claimConfirmation(c)
	}
	if !st.Terminal() {
		o.ConfirmedBy = ""
	}
	return o
}

// configRecords lists the server's configure claims as initial configuration evidence.
func configRecords(all []*claims.Claim) []customConfigRecord {
	var out []customConfigRecord
	for _, c := range all {
		if c.EffectiveProfile() != receipt.ProfileConfigure || !c.Phase.Final() {
			continue
		}
		out = append(out, customConfigRecord{Status: c.Status, Confirmation: claimConfirmation(c),
			Legacy: c.Legacy()})
	}
	return out
}
