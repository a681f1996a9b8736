package receipt

import (
	"bytes"
	"crypto/sha256"
	_ "embed" // the minion module and its bootstrap assets ship inside the Go module
	"encoding/hex"
)

// minionModuleName is the file name Salt loads the protocol 1 execution module from
// (module name oduflow_job).
const minionModuleName = "oduflow_job.py"

//go:embed minion/oduflow_job.py
var minionModule []byte

//go:embed minion/bootstrap/client_receipts.sls
var clientReceiptsState []byte

//go:embed minion/bootstrap/cloud-init.yaml
var cloudInitSnippet []byte

//go:embed minion/host.py
var minionTestHost []byte

// MinionFiles is the oduflow_job Salt execution module (Python, protocol 1) and its bootstrap
// assets, as embedded in this Go module. Every byte slice is the caller's own copy.
type MinionFiles struct {
	// Name is the file name Salt loads the module from: "oduflow_job.py" (module oduflow_job).
	Name string
	// SaltPath is where the client_receipts state expects the module on the master:
	// "salt://_modules/oduflow_job.py". Place Source there, or in the minion's extension-module
	// directory (extmods/modules/).
	SaltPath string
	// Source is the module itself.
	Source []byte
	// SHA256 is the lowercase hex SHA-256 of Source; the module reports the same value in its
	// capabilities (module_sha256), so a controller can tell which revision a minion runs.
	SHA256 string
	// ReceiptsState is the client_receipts Salt state (SLS): it keeps the module file managed in
	// the minion's extension-module directory, from SaltPath with a source_hash equal to SHA256,
	// and syncs modules when it changes. Install it in the master's state tree.
	ReceiptsState []byte
	// CloudInit is the cloud-config snippet that writes the module (base64) into
	// /var/cache/salt/minion/extmods/modules/ before the minion first starts.
	CloudInit []byte
	// TestHost is the standard-library Python stand-in for a minion runtime (minion/host.py: a fake
	// salt package and loader globals, JSON lines on stdin/stdout) that runs the real module
	// without Salt; tests and the example CLI's demo use it. It is never deployed to a minion.
	TestHost []byte
}

// MinionModule returns the embedded minion module and its bootstrap assets.
func MinionModule() MinionFiles {
	sum := sha256.Sum256(minionModule)
	return MinionFiles{
		Name:          minionModuleName,
		SaltPath:      "salt://_modules/" + minionModuleName,
		Source:        bytes.Clone(minionModule),
		SHA256:        hex.EncodeToString(sum[:]),
		ReceiptsState: bytes.Clone(clientReceiptsState),
		CloudInit:     bytes.Clone(cloudInitSnippet),
		TestHost:      bytes.Clone(minionTestHost),
	}
}
