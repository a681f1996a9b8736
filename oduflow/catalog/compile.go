package catalog

import (
	"github.com/oduflow/oduflow-go/internal/errmark"
	"github.com/oduflow/oduflow-go/profiles"
)

// Compile validates a custom state source and compiles it to the canonical JSON of its Salt high data
// and that form's digest (profiles.CompileCustom). Both catalogs (Open and the etcd store's) compile
// every source they store with it, and oduflow freezes the same compiled form in an execution's
// snapshot. Its error (a *profiles.CustomError matching profiles.ErrInvalidCustom) carries a code and a
// position, never the source.
func Compile(source []byte) (_ Compiled, err error) {
	defer errmark.Boundary(&err)
	c, err := profiles.CompileCustom(source)
	if err != nil {
		return Compiled{}, err
	}
	return Compiled{Canonical: c.Canonical, Digest: c.Digest}, nil
}
