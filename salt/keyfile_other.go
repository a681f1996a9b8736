//go:build !unix

package salt

import "github.com/cockroachdb/errors"

type keyCache struct{}

func (*keyCache) read(path string) (string, error) { return readKeyFile(path) }

func readKeyFile(path string) (string, error) {
	return "", errors.Wrap(ErrKeyFile, "user key files are only supported on unix")
}
