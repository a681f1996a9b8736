package receipt

import (
	"bytes"
	"crypto/sha256"
	_ "embed" // the minion module and its bootstrap assets ship inside the Go module
	"encoding/hex"
)

// MinionModuleName is the file name Salt loads the protocol 1 execution module from
// (module name oduflow_job): place MinionModule() at salt://_modules/oduflow_job.py on the
// master, or in the minion's extension-module directory (extmods/modules/).
const MinionModuleName = "oduflow_job.py"

// MinionModuleSaltPath is where the client_receipts state expects the module on the master.
const MinionModuleSaltPath = "salt://_modules/" + MinionModuleName

//go:embed minion/oduflow_job.py
var minionModule []byte

//go:embed minion/bootstrap/client_receipts.sls
var clientReceiptsState []byte

//go:embed minion/bootstrap/cloud-init.yaml
var cloudInitSnippet []byte

//go:embed minion/host.py
var minionTestHost []byte

// MinionModule returns a copy of the oduflow_job Salt execution module (Python, protocol 1).
func MinionModule() []byte { return bytes.Clone(minionModule) }

// MinionModuleSHA256 returns the lowercase hex SHA-256 of MinionModule(); the bootstrap
// assets and the module's own capabilities() report (module_sha256) carry the same value.
func MinionModuleSHA256() string {
	sum := sha256.Sum256(minionModule)
	return hex.EncodeToString(sum[:])
}

// ClientReceiptsState returns a copy of the client_receipts Salt state (SLS): it keeps the
// module file managed in the minion's extension-module directory, from
// MinionModuleSaltPath with a source_hash equal to MinionModuleSHA256, and syncs modules
// when it changes. Install it in the master's state tree (e.g. as client_receipts.sls).
func ClientReceiptsState() []byte { return bytes.Clone(clientReceiptsState) }

// CloudInitSnippet returns a copy of the cloud-config snippet that writes the module
// (base64) into /var/cache/salt/minion/extmods/modules/ before the minion first starts.
func CloudInitSnippet() []byte { return bytes.Clone(cloudInitSnippet) }

// MinionTestHost returns a copy of the standard-library Python host that runs the module
// outside Salt with stand-in loader globals and a fake state system. It is a test and demo
// aid (used by fakeminion.PythonHost), never a deployment artifact.
func MinionTestHost() []byte { return bytes.Clone(minionTestHost) }
