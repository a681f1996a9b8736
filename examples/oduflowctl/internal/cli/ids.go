package cli

import (
	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"github.com/oduflow/oduflow-go/receipt"
)

// checkMinion checks a minion id against the profile table's id policy.
func (e *env) checkMinion(cmd, s string) error {
	t, err := e.table()
	if err != nil {
		return err
	}
	return fromEnv(oduflowenv.CheckMinionIn(cmd, s, t))
}

func checkRequest(cmd, s string) error { return fromEnv(oduflowenv.CheckRequest(cmd, s)) }

// fixedProfile parses a profile of the table (custom has its own commands).
func (e *env) fixedProfile(cmd, s string) (receipt.Profile, error) {
	t, err := e.table()
	if err != nil {
		return "", err
	}
	p, err := oduflowenv.ProfileIn(cmd, s, t)
	return p, fromEnv(err)
}

// requestArg is the optional REQUEST_ID at pos[i], or a new canonical request id when it is
// omitted.
func requestArg(pos []string, i int) string {
	if len(pos) > i {
		return pos[i]
	}
	return receipt.NewRequestID()
}
