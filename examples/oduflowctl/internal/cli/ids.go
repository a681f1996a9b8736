package cli

import (
	"github.com/oduflow/oduflow-go/examples/internal/oduflowenv"
	"github.com/oduflow/oduflow-go/receipt"
)

func checkMinion(cmd, s string) error { return fromEnv(oduflowenv.CheckMinion(cmd, s)) }

func checkRequest(cmd, s string) error { return fromEnv(oduflowenv.CheckRequest(cmd, s)) }

// fixedProfile parses a fixed profile (custom has its own commands).
func fixedProfile(cmd, s string) (receipt.Profile, error) {
	p, err := oduflowenv.FixedProfile(cmd, s)
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
