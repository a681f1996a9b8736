package cli

import (
	"github.com/oduflow/oduflow-go/receipt"
)

func checkMinion(cmd, s string) error {
	if err := receipt.ValidateMinionID(s); err != nil {
		return usagef("%s: invalid minion id %q: want client-<canonical lowercase UUID>", cmd, s)
	}
	return nil
}

func checkRequest(cmd, s string) error {
	if err := receipt.ValidateRequestID(s); err != nil {
		return usagef("%s: invalid request id %q: want a canonical lowercase UUID", cmd, s)
	}
	return nil
}

// fixedProfile parses a fixed profile (custom has its own commands).
func fixedProfile(cmd, s string) (receipt.Profile, error) {
	p, err := receipt.ParseProfile(s)
	if err != nil {
		return "", usagef("%s: unknown profile %q: want configure, production, volume_resize or credentials", cmd, s)
	}
	if p == receipt.ProfileCustom {
		return "", usagef("%s: profile custom: use oduflowctl custom start/status", cmd)
	}
	return p, nil
}

// requestArg is the optional REQUEST_ID at pos[i], or a new canonical request id when it is
// omitted.
func requestArg(pos []string, i int) string {
	if len(pos) > i {
		return pos[i]
	}
	return receipt.NewRequestID()
}
