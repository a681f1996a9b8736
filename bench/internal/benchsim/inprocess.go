package benchsim

import (
	"context"
	"os"
	"time"

	"github.com/oduflow/oduflow-go/bench/internal/benchkit"
	"github.com/oduflow/oduflow-go/salt"
	"github.com/oduflow/oduflow-go/salt/salttest"
)

// StartInProcess starts a simulated master in this process, its event socket and root key in a fresh
// short temporary directory (a unix socket path must fit in 107 bytes); stop closes the master and
// removes the directory.
func StartInProcess(ctx context.Context) (sim *salttest.Master, stop func(), err error) {
	dir, err := os.MkdirTemp("", "bsim")
	if err != nil {
		return nil, nil, err
	}
	sim, err = salttest.Start(ctx, salttest.WithDir(dir), salttest.WithLogger(benchkit.Discard()))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	return sim, func() { _ = sim.Close(); _ = os.RemoveAll(dir) }, nil
}

// NewClient is a Client of the simulated master at addr with its root key file: a 60 s request timeout
// (a loaded round queues thousands of publishes) and no logs.
func NewClient(addr, keyFile string) (*salt.Client, error) {
	return salt.NewClient(addr, salt.WithAuth(salt.UserKey("root", keyFile)),
		salt.WithRequestTimeout(60*time.Second), salt.WithLogger(benchkit.Discard()))
}
