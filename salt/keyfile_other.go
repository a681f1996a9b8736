//go:build !unix

package salt

import "github.com/cockroachdb/errors"

func readKeyFile(path string) (string, error) {
	return "", errors.Wrap(ErrKeyFile, "user key files are only supported on unix")
}
