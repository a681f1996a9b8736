package safefile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a tmpfs of size bytes on a fresh directory (unmounted at cleanup); it skips the test
// when mounting is not permitted (not root, or no CAP_SYS_ADMIN in a container).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Skipf("mount tmpfs: %v (needs root)", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// TestStorageFullOnTmpfs: on a real 1 MiB tmpfs filling up, every write ends with an error that
// StorageRefused recognises (ENOSPC), nothing half-written stays (no temporary file, the last complete
// content of each record intact), and a remounted read-only file system (EROFS) is recognised too.
func TestStorageFullOnTmpfs(t *testing.T) {
	root := mountTmpfs(t, "1m")
	s, err := OpenStore(filepath.Join(root, "claims"), WithCreate())
	if err != nil {
		t.Fatal(err)
	}
	rec := bytes.Repeat([]byte("c"), 64<<10)
	var written []string
	var full error
	for i := 0; i < 64 && full == nil; i++ {
		name := "r" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if full = s.CreateExclusive(name, rec); full == nil {
			written = append(written, name)
		}
	}
	if full == nil {
		t.Fatal("64 x 64 KiB fit in a 1 MiB tmpfs")
	}
	if !StorageRefused(full) {
		t.Fatalf("CreateExclusive on a full file system: %v, want StorageRefused", full)
	}
	if err := s.WriteAtomic(written[0], bytes.Repeat([]byte("d"), 256<<10)); !StorageRefused(err) {
		t.Fatalf("WriteAtomic on a full file system: %v, want StorageRefused", err)
	}
	if got, err := s.Read(written[0]); err != nil || !bytes.Equal(got, rec) {
		t.Fatalf("record after the failed replacement: %d bytes, %v", len(got), err)
	}
	ents, err := os.ReadDir(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			t.Fatalf("temporary file %s left behind", e.Name())
		}
	}
	if len(ents) != len(written) {
		t.Fatalf("%d files for %d records", len(ents), len(written))
	}
	t.Logf("%d records of 64 KiB fit; then: %v", len(written), full)

	if err := unix.Mount("", root, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	if err := s.Remove(written[1]); !StorageRefused(err) {
		t.Fatalf("Remove on a read-only file system: %v, want StorageRefused", err)
	}
	if err := s.CreateExclusive("late", []byte("x")); !StorageRefused(err) {
		t.Fatalf("CreateExclusive on a read-only file system: %v, want StorageRefused", err)
	}
}
