package etcdtest

import (
	"context"
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

// closedContext is a context that has already ended: Close(closedContext()) stops at once, draining
// nothing (what Close did before it took a drain deadline).
func closedContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
