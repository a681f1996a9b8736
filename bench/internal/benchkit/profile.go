package benchkit

import (
	"os"
	"runtime/pprof"
	"sync"
)

// StartCPUProfile starts a CPU profile of this process written to path and returns the function that
// stops it and closes the file (calling it again does nothing); an empty path profiles nothing.
func StartCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return sync.OnceFunc(func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}), nil
}
