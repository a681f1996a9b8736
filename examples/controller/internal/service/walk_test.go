package service_test

import (
	"errors"
	"io/fs"
	"path/filepath"
)

// walk calls file with the path of every regular file under dir.
func walk(dir string, file func(path string)) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			// A temporary file renamed or removed between the listing and its stat is not an error
			// of the store: the walk goes on.
			if path != dir && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() {
			file(path)
		}
		return nil
	})
}
