package oduflowgo_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// readmeSnippets returns the ```go blocks of a Markdown file that are whole programs (package main).
func readmeSnippets(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	var cur *strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```go"):
			cur = new(strings.Builder)
		case cur != nil && strings.HasPrefix(line, "```"):
			if strings.HasPrefix(strings.TrimSpace(cur.String()), "package main") {
				out = append(out, cur.String())
			}
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReadmeProgramsBuildFromAClone follows the README's "From a clone" section as a new user does: a
// module of its own in a directory outside the repository, one replace line pointing at the clone, no
// go.work. Every Go program in a README.md of the repository must pass go vet and go build there. It
// fails on a README snippet that does not compile (the token source handed its own client, Text()
// used as one value) and on install instructions that do not work.
func TestReadmeProgramsBuildFromAClone(t *testing.T) {
	goBin, mod := outsideModule(t, "example.com/newuser")
	readmes, err := filepath.Glob("README.md")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("*/*/README.md")
	readmes = append(readmes, more...)
	more, _ = filepath.Glob("*/README.md")
	readmes = append(readmes, more...)
	n := 0
	for _, readme := range readmes {
		for i, src := range readmeSnippets(t, readme) {
			n++
			dir := filepath.Join(mod, "cmd", strings.NewReplacer("/", "_", ".", "_").Replace(readme)+"_"+string(rune('a'+i)))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n == 0 {
		t.Fatal("no Go program in README.md: the tour is gone, or this test's extraction is broken")
	}
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	for _, args := range [][]string{{"mod", "tidy"}, {"vet", "./..."}, {"build", "./..."}} {
		cmd := exec.Command(goBin, args...)
		cmd.Dir, cmd.Env = mod, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("go %s in a module outside the repository (%d README programs): %v\n%s", strings.Join(args, " "), n, err, out.String())
		}
	}
	t.Logf("%d README programs vetted and built from a clone with a replace line", n)
}

// TestMisplacedOptionIsACompileError: the salt options are typed per constructor, so an option a
// constructor does not read does not compile (it used to be accepted and silently ignored), while the
// options both read (WithLogger, WithLimits) go to either.
func TestMisplacedOptionIsACompileError(t *testing.T) {
	goBin, mod := outsideModule(t, "example.com/opts")
	build := func(body string) string {
		t.Helper()
		src := "package main\n\nimport (\n\t\"context\"\n\t\"log/slog\"\n\t\"time\"\n\n\t\"github.com/oduflow/oduflow-go/salt\"\n)\n\n" +
			"var _, _ = context.Background, time.Second\nvar _ = slog.Default\n\nfunc main() {\n" + body + "\n}\n"
		if err := os.WriteFile(filepath.Join(mod, "main.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(goBin, "build", "-o", os.DevNull, ".")
		cmd.Dir, cmd.Env = mod, append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if out := build(`	_, _ = salt.NewClient("tcp://127.0.0.1:4506", salt.WithRequestTimeout(time.Second), salt.WithLogger(slog.Default()))
	_, _ = salt.SubscribeEvents(context.Background(), "unix:///x", salt.WithTagPrefixes("salt/job/"), salt.WithLogger(slog.Default()))`); out != "" {
		t.Fatalf("the right options do not build: %s", out)
	}
	for _, body := range []string{
		`	_, _ = salt.NewClient("tcp://127.0.0.1:4506", salt.WithTagPrefixes("salt/job/"))`,
		`	_, _ = salt.SubscribeEvents(context.Background(), "unix:///x", salt.WithRequestTimeout(time.Second))`,
		`	_ = salt.NewTokenSource(nil, "pam", "u", "p", salt.WithRequestTimeout(time.Second))`,
	} {
		if out := build(body); !strings.Contains(out, "does not implement") {
			t.Errorf("%s\nbuilt, or failed otherwise: %q", body, out)
		}
	}
}

// outsideModule is a new module, named name, in a temporary directory outside the repository, that
// requires this module through one replace line pointing at the clone (the README's "From a clone"), and
// the go command to build it with. It skips under -short and without a go command.
func outsideModule(t *testing.T, name string) (goBin, dir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a module outside the repository (seconds to minutes): not with -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	clone, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	goMod := "module " + name + "\n\ngo 1.26\n\nrequire github.com/oduflow/oduflow-go v0.0.0\n\n" +
		"replace github.com/oduflow/oduflow-go => " + clone + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(goMod), 0o644); err != nil {
		t.Fatal(err)
	}
	return goBin, dir
}
