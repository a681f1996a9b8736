package catalog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/errors"
)

// Child processes of this test binary (concurrent get-or-create callers) are told what to do by these.
const (
	envChild = "ODUFLOW_CATALOG_TEST_CHILD" // "getorcreate"
	envDir   = "ODUFLOW_CATALOG_TEST_DIR"
)

func TestMain(m *testing.M) {
	if os.Getenv(envChild) == "getorcreate" {
		os.Exit(runGetOrCreateChild())
	}
	os.Exit(m.Run())
}

// runGetOrCreateChild waits for the barrier, then calls GetOrCreateDefinition from 8 goroutines and prints
// one JSON line per call: {"id":..., "created":...}.
func runGetOrCreateChild() int {
	s, err := Open(os.Getenv(envDir), withCompiler(fakeCompile), withLockWait(30*time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// the barrier: every child is ready, then the parent's line on stdin starts them together
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, "barrier:", err)
		return 1
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	failed := false
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, created, err := s.GetOrCreateDefinition(context.Background(), "acme", "/srv/motd.yaml", []byte("a: b\n"))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				failed = true
				return
			}
			b, _ := json.Marshal(map[string]any{"id": d.ID, "created": created})
			fmt.Println(string(b))
		}()
	}
	wg.Wait()
	if failed {
		return 1
	}
	return 0
}

func countDefinitions(t *testing.T, s *FileStore, company, name string) []string {
	t.Helper()
	defs, err := s.Definitions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range defs {
		if d.Company == company && d.Name == name {
			ids = append(ids, d.ID)
		}
	}
	return ids
}

func TestGetOrCreateGoroutinesCreateOne(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	const n = 64
	ids := make([]string, n)
	created := make([]bool, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			d, c, err := s.GetOrCreateDefinition(ctx, "acme", "motd", []byte(fmt.Sprintf("v: %d\n", i)))
			ids[i], created[i], errs[i] = d.ID, c, err
		}(i)
	}
	close(start)
	wg.Wait()
	nCreated := 0
	for i := range ids {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("call %d got definition %s, call 0 %s", i, ids[i], ids[0])
		}
		if created[i] {
			nCreated++
		}
	}
	if nCreated != 1 {
		t.Fatalf("created %d times", nCreated)
	}
	if got := countDefinitions(t, s, "acme", "motd"); len(got) != 1 {
		t.Fatalf("definitions named motd: %v", got)
	}
	// Another company may use the same name; the same company may not create it again.
	if _, c, err := s.GetOrCreateDefinition(ctx, "beta", "motd", []byte("a: b\n")); err != nil || !c {
		t.Fatalf("beta: created %v, %v", c, err)
	}
	if _, err := s.CreateDefinition(ctx, "acme", "motd", []byte("a: b\n")); !errors.Is(err, ErrExists) || !errors.Is(err, errNameTaken) {
		t.Fatalf("CreateDefinition of a taken name: %v", err)
	}
}

// 4 OS processes x 8 goroutines of get-or-create on one catalog directory: exactly one definition.
func TestGetOrCreateAcrossProcessesCreatesOne(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := filepath.Join(t.TempDir(), "catalog")
	if _, err := Open(dir, withCompiler(fakeCompile), WithCreate()); err != nil {
		t.Fatal(err)
	}
	const procs = 4
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bytes.Buffer, procs)
	barrier := make([]io.WriteCloser, procs) // each child's stdin: one line starts them all
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envChild+"=getorcreate", envDir+"="+dir)
		outs[i] = &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = outs[i], os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		barrier[i] = in
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	for _, in := range barrier {
		if _, err := io.WriteString(in, "go\n"); err != nil {
			t.Fatal(err)
		}
		_ = in.Close()
	}
	ids := map[string]int{}
	created := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
		lines := strings.Split(strings.TrimSpace(outs[i].String()), "\n")
		if len(lines) != 8 {
			t.Fatalf("child %d output %q", i, outs[i].String())
		}
		for _, l := range lines {
			var r struct {
				ID      string `json:"id"`
				Created bool   `json:"created"`
			}
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatalf("child %d line %q: %v", i, l, err)
			}
			ids[r.ID]++
			if r.Created {
				created++
			}
		}
	}
	if len(ids) != 1 || created != 1 {
		t.Fatalf("ids %v, created %d", ids, created)
	}
	s, err := Open(dir, withCompiler(fakeCompile))
	if err != nil {
		t.Fatal(err)
	}
	if got := countDefinitions(t, s, "acme", "/srv/motd.yaml"); len(got) != 1 {
		t.Fatalf("definitions: %v", got)
	}
}

func TestRenameKeepsOneDefinitionPerName(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	a, err := s.CreateDefinition(ctx, "acme", "a", []byte("a: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.CreateDefinition(ctx, "acme", "b", []byte("a: b\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rename(ctx, b.ID, "a"); !errors.Is(err, errNameTaken) {
		t.Fatalf("rename onto a taken name: %v", err)
	}
	if _, err := s.Rename(ctx, a.ID, "c"); err != nil {
		t.Fatal(err)
	}
	// "a" is free now, "c" resolves to the renamed definition.
	if got, c, err := s.GetOrCreateDefinition(ctx, "acme", "c", []byte("x: y\n")); err != nil || c || got.ID != a.ID {
		t.Fatalf("c: %+v created %v %v", got, c, err)
	}
	if _, err := s.Rename(ctx, b.ID, "a"); err != nil {
		t.Fatalf("rename onto the freed name: %v", err)
	}
	if got, c, err := s.GetOrCreateDefinition(ctx, "acme", "a", []byte("x: y\n")); err != nil || c || got.ID != b.ID {
		t.Fatalf("a: %+v created %v %v", got, c, err)
	}
	if got, c, err := s.GetOrCreateDefinition(ctx, "acme", "b", []byte("x: y\n")); err != nil || !c || got.ID == b.ID {
		t.Fatalf("b after rename: %+v created %v %v", got, c, err)
	}
	if d, err := s.Definition(ctx, a.ID); err != nil || d.Revision != 1 || d.Name != "c" {
		t.Fatalf("renamed: %+v %v", d, err)
	}
}

// A catalog written before the name index (two definitions of one name) still opens, says which, and
// resolves the name to the definition that ran.
func TestLegacyDuplicatesOpenAndResolveToTheOneThatRan(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	// Write two definitions of one name the way the old CreateDefinition did: no name index.
	mk := func(tmpName, src string) Definition {
		d, err := s.CreateDefinition(ctx, "acme", tmpName, []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.st.Remove(namName("acme", d.Name)); err != nil {
			t.Fatal(err)
		}
		d.Name = "motd"
		if err := s.writeJSON(defName(d.ID), &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	older, ran := mk("one", "a: b\n"), mk("two", "c: d\n")
	if _, err := s.Assign(ctx, ran.ID, minionA, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateExecution(ctx, snapshot(t, ran, minionA, "11111111-1111-4111-8111-111111111111", ModeApply)); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(s.Dir(), withCompiler(fakeCompile))
	if err != nil {
		t.Fatalf("a catalog with duplicates must open: %v", err)
	}
	dups, err := s2.duplicates(ctx)
	if err != nil || len(dups) != 1 || len(dups[0].IDs) != 2 || dups[0].Name != "motd" || dups[0].Indexed != "" {
		t.Fatalf("duplicates %+v %v", dups, err)
	}
	got, created, err := s2.GetOrCreateDefinition(ctx, "acme", "motd", []byte("e: f\n"))
	if err != nil || created || got.ID != ran.ID {
		t.Fatalf("got %s created %v (%v); ran %s older %s", got.ID, created, err, ran.ID, older.ID)
	}
	if ids, ix, err := s2.Duplicates(ctx, dups[0].Company, "motd"); err != nil || len(ids) != 2 || ix != ran.ID {
		t.Fatalf("Duplicates: %v %q %v", ids, ix, err)
	}
	if dups, _ := s2.duplicates(ctx); len(dups) != 1 || dups[0].Indexed != ran.ID {
		t.Fatalf("duplicates after indexing %+v", dups)
	}
}

// A crash after the name index was written and before its definition: the next call creates the
// definition under the indexed id, never a second one.
func TestIndexWithoutDefinitionIsCompleted(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	id := "22222222-2222-4222-8222-222222222222"
	if err := s.createJSON(namName("acme", "motd"), &nameIndex{Company: "acme", Name: "motd", DefinitionID: id}); err != nil {
		t.Fatal(err)
	}
	d, created, err := s.GetOrCreateDefinition(ctx, "acme", "motd", []byte("a: b\n"))
	if err != nil || !created || d.ID != id {
		t.Fatalf("%+v %v %v", d, created, err)
	}
	if got := countDefinitions(t, s, "acme", "motd"); len(got) != 1 {
		t.Fatalf("definitions %v", got)
	}
}
