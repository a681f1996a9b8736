package fakeminion

import (
	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/salt/salttest"
)

// Add registers m on master: the master accepts m's public key (what the dispatcher's WithPKIDir pins
// and verifies m's signed receipt proofs against), then routes the jobs published to m.ID() to m.
func Add(master *salttest.Master, m *Model) error {
	if err := master.AcceptMinionKey(m.ID(), m.PublicKeyPEM()); err != nil {
		return errors.Wrap(err, "fakeminion: accept key")
	}
	master.AddMinion(m.ID(), m.Handle)
	return nil
}

// AddPython registers minion id, served by h's real module, on master: it gives id a fresh Salt key
// (ProvisionKey; the module signs its proofs with it), the master accepts the public half, then routes the
// jobs published to id to the host.
func AddPython(master *salttest.Master, h *PythonHost, id string) error {
	pub, err := h.ProvisionKey(id)
	if err != nil {
		return err
	}
	if err := master.AcceptMinionKey(id, pub); err != nil {
		return errors.Wrap(err, "fakeminion: accept key")
	}
	master.AddMinion(id, h.Handler(id))
	return nil
}
