package service_test

import (
	"io/fs"
	"path/filepath"
)

// walk calls file for every regular file under dir.
func walk(dir string, file func()) error {
	return filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			file()
		}
		return nil
	})
}
