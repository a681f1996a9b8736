package safefile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
)

// The staged create of the claim store, as the claim store runs it: an empty entry in the sub-directory
// idx (made by this call, its parent fsync left to the prior work), created while the record's temporary
// file is written, then the record, made visible only after the prior work (the entry's fsync, then the
// parent's) and the record's own fsync, which run concurrently. The helper is SIGKILLed at each point; "prior-synced" and "temp-synced" lie between the two
// concurrent fsyncs (one side done, the other maybe not).
var stagedCreateStages = []string{"empty-created", "after-temp-write", "prior-synced", "temp-synced",
	"before-link", "after-link"}

const stagedContent = "staged record content"

func stagedCreateHelper(dir, name, stage string) int {
	park := parkAt(stage)
	s, err := OpenStore(dir, withHook(park))
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	err = s.CreateExclusiveAfter(name, []byte(stagedContent), func() (func() error, error) {
		idx, _, err := s.Sub("idx", true)
		if err != nil {
			return nil, err
		}
		entry, err := idx.CreateEmpty(name)
		if err != nil {
			return nil, err
		}
		return func() error {
			if err := entry(); err != nil {
				return err
			}
			if err := s.SyncDir(); err != nil {
				return err
			}
			park("prior-synced")
			return nil
		}, nil
	})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("DONE")
	return 0
}

func TestCrashDuringStagedCreate(t *testing.T) {
	for _, stage := range stagedCreateStages {
		t.Run(stage, func(t *testing.T) {
			s := newStore(t)
			h := startHelper(t, "create-after", s.Dir(), "rec", stage)
			h.Expect(t, "READY")
			h.Kill(t)
			idx, _, err := s.Sub("idx", false)
			if err != nil {
				t.Fatalf("the entry's directory: %v", err)
			}
			if b, err := idx.Read("rec"); err != nil || len(b) != 0 {
				t.Fatalf("entry after kill at %s: %q, %v", stage, b, err)
			}
			b, err := s.Read("rec")
			switch {
			case stage == "after-link":
				if err != nil || string(b) != stagedContent {
					t.Fatalf("record after kill at %s: %q, %v", stage, b, err)
				}
			case !errors.Is(err, ErrNotExist):
				t.Fatalf("record visible after kill at %s (before its rename): %q, %v", stage, b, err)
			}
			// Only names, never temporary files, are listed; the stray temporary file (if any) is ignored.
			names, err := s.List("")
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				if strings.HasPrefix(n, tempPrefix) || (n != "rec" && n != "idx") {
					t.Fatalf("List after kill = %v", names)
				}
			}
			// The request can be retried: the entry is reused, the record created once.
			entry, err := idx.CreateEmpty("rec")
			if !errors.Is(err, ErrExist) || entry != nil {
				t.Fatalf("entry not kept: %v", err)
			}
			err = s.CreateExclusiveAfter("rec", []byte(stagedContent), func() (func() error, error) {
				return idx.SyncDir, nil
			})
			if stage == "after-link" {
				if !errors.Is(err, ErrExist) {
					t.Fatalf("retry over an existing record: %v", err)
				}
			} else if err != nil {
				t.Fatalf("retry: %v", err)
			}
			if b, err := s.Read("rec"); err != nil || string(b) != stagedContent {
				t.Fatalf("after retry: %q, %v", b, err)
			}
			strays, _ := filepath.Glob(filepath.Join(s.Dir(), tempPrefix+"*"))
			if len(strays) > 1 {
				t.Fatalf("strays: %v", strays)
			}
		})
	}
	t.Run("completed", func(t *testing.T) {
		s := newStore(t)
		h := startHelper(t, "create-after", s.Dir(), "rec", "never")
		h.Expect(t, "DONE")
		if b, err := s.Read("rec"); err != nil || string(b) != stagedContent {
			t.Fatalf("Read: %q, %v", b, err)
		}
		if entries, _ := os.ReadDir(s.Dir()); len(entries) != 2 {
			t.Fatalf("entries: %v", entries)
		}
	})
}
