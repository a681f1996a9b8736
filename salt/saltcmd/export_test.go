package saltcmd

import (
	"github.com/oduflow/oduflow-go/salt"
)

// ClassifyFindJobForTest exposes classifyFindJob to the fuzz test.
func ClassifyFindJobForTest(r Result, jid salt.JID) int { return int(classifyFindJob(r, jid)) }
