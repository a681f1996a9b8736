package oduflow

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/oduflow/oduflow-go/oduflow/filestore"
	"github.com/oduflow/oduflow-go/receipt"
)

// openWorkerLogChecked refuses a FIFO at once (it never blocks waiting for a reader), and a log opened before
// Start receives the detached worker's output.
func TestOpenWorkerLogBeforeStart(t *testing.T) {
	t.Parallel()
	dir := claimDir(t)
	if _, err := filestore.Open(dir); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := openWorkerLogChecked(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a FIFO was accepted as the worker log")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("openWorkerLogChecked blocked on a FIFO")
	}

	e := startSim(t)
	m := e.addMinion()
	if _, err := filestore.Open(e.dir); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(e.dir, workerLogName)
	f, err := openWorkerLogChecked(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := e.dispatcher(WithDetachedWorkers(scriptWorker(t, 0)), withWorkerLogFile(f))
	if _, err := d.Start(context.Background(), m.ID(), uuid.NewString(), receipt.ProfileConfigure); err != nil {
		t.Fatal(err)
	}
	if !waitUntil(5*time.Second, func() bool { b, _ := os.ReadFile(logPath); return len(b) > 0 }) {
		t.Fatal("the worker wrote nothing to the log opened before Start")
	}
}
