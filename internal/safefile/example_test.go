package safefile_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/oduflow/oduflow-go/internal/safefile"
)

func ExampleStore() {
	base, _ := os.MkdirTemp("", "safefile-example")
	defer os.RemoveAll(base)
	s, err := safefile.OpenStore(filepath.Join(base, "job-receipts"), safefile.WithCreate())
	if err != nil {
		fmt.Println(err)
		return
	}
	lock, err := s.LockWait(context.Background(), "req-1", time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	held, _ := s.IsLocked("req-1")
	fmt.Println("held:", held)
	fmt.Println(s.CreateExclusive("req-1", []byte("first")))
	fmt.Println(errors.Is(s.CreateExclusive("req-1", []byte("second")), safefile.ErrExist))
	b, _ := s.Read("req-1")
	fmt.Println(string(b))
	_ = lock.Release()
	held, _ = s.IsLocked("req-1")
	fmt.Println("held:", held)
	// Output:
	// held: true
	// <nil>
	// true
	// first
	// held: false
}
