package oduflow

import (
	"context"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/receipt"
	"github.com/oduflow/oduflow-go/salt"
)

// Ping checks that the exact accepted client is reachable: test.ping to that minion alone (list target),
// then oduflow_job.capabilities (Proof also needs the key the master accepted, read from the pki dir). A minion the master does not match (key not accepted, or unknown) is
// reported as KeyAccepted=false, not as an error; transport and authentication failures are errors.
func (d *Dispatcher) Ping(ctx context.Context, minion string) (*Readiness, error) {
	if err := receipt.ValidateMinionID(minion); err != nil {
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
	default:
		return nil, errors.Wrap(err, "oduflow: ping")
	}
	if !r.Reachable {
		return r, nil
	}
	caps, err := d.capabilities(ctx, minion)
	switch {
	case err == nil:
		r.Protocol, r.PillarReady = caps.Protocol, caps.PillarReady
		if caps.Proof {
			_, kerr := loadMinionKey(ctx, d.pkiDir, minion)
			r.Proof = kerr == nil
		}
	case errors.Is(err, errNoReturn):
	default:
		return nil, errors.Wrap(err, "oduflow: capabilities")
	}
	return r, nil
}
