//go:build !unix

package authfile

import (
	"io"
	"os"
)

// read on systems without POSIX owners and modes: a regular file, at most the bound.
func read(env, path string, o Options) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, refuse(env, "cannot open the file: %s", errnoText(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, refuse(env, "not a regular file")
	}
	if fi.Size() > o.MaxBytes {
		return nil, refuse(env, "over %d bytes", o.MaxBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, o.MaxBytes+1))
	if err != nil || int64(len(b)) > o.MaxBytes {
		return nil, refuse(env, "cannot read the file, or over %d bytes", o.MaxBytes)
	}
	return b, nil
}

func checkDir(env, path string) error {
	fi, err := os.Stat(path)
	if err == nil && !fi.IsDir() {
		return refuse(env, "not a directory")
	}
	return nil
}
