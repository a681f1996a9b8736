package etcdtest

import (
	"os"
	"testing"
)

var tempRoot string

func tempDir() string {
	d, err := os.MkdirTemp(tempRoot, "member-")
	if err != nil {
		panic(err)
	}
	return d
}

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "etcdtest-")
	if err != nil {
		panic(err)
	}
	tempRoot = d
	code := m.Run()
	if sharedSingle.stop != nil {
		sharedSingle.stop()
	}
	_ = os.RemoveAll(d)
	os.Exit(code)
}
