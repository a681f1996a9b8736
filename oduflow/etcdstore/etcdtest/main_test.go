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
	if code := runCrashChild(); code >= 0 { // a child dispatcher process of TestKillDispatcherAtEachStep
		os.Exit(code)
	}
	if code := runPauseChild(); code >= 0 { // a child dispatcher process of TestPausedDispatcherAtEachStep
		os.Exit(code)
	}
	if code := runMemberChild(); code >= 0 { // an etcd member of its own (startMemberProcess)
		os.Exit(code)
	}
	if code := runRaceChild(); code >= 0 { // a child dispatcher process of TestThreeProcessesOneRequest
		os.Exit(code)
	}
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
