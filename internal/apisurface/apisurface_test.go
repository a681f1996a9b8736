// Package apisurface_test keeps the module's exported API small: it counts the
// exported top-level names of every non-internal package of the main module
// and of the library's nested modules in libraryModules (the other nested
// modules, adapters, examples and benchmarks, are not part of it) and holds
// every public package to a budget. The seven library packages (budgets) also have each name used by an
// example (a file under examples/ or a godoc Example) or listed, with a reason,
// in allowlist.txt, and their sum within totalBudget. The other public
// packages (supportBudgets: the root, the etcd store and the test packages,
// whose callers are tests the example rule does not see) are held to their
// counts. Examples and programs (package main) are counted, never budgeted;
// a new public package without a budget fails the test.
package apisurface_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const modPath = "github.com/oduflow/oduflow-go"

// libraryModules are the nested modules (directories relative to the root)
// whose packages are budgeted as if they were in this module: the etcd store
// is a module of its own for its dependencies' sake, not to leave the budget.
var libraryModules = []string{"oduflow/etcdstore"}

// totalBudget is the target for the budgeted packages together.
const totalBudget = 257 // + 3: status windows given at construction (issue 32): filestore.Option and WithStatusWindows (Open takes options, no internal hook type), oduflow.StatusWindowsError (New refuses a store whose windows differ from its Timers instead of setting them); - 30: one name per concept (0.5): oduflow no longer declares the 27 aliases of package claims nor FileClaimStore and OpenFileClaimStore, and the 31 error codes live in claims alone (their type's package); + 3: salt.Option split into ClientOption, EventOption, CommonOption and TokenOption (an option a constructor does not read is a compile error); + 1: claims.ChangeFeed (Dispatcher.Watch wakes on other processes' writes); + 9: profile tables (the profiles table API, receipt.ValidateSeedMinionID, oduflow.WithProfiles and CodeProfileTableMismatch); + 1: CodeFenceExhausted; + 3: salt.CheckUserKey (a service checks its key file before it listens), filestore.OpenExisting and ErrNoStore (a reader never creates a claim store); + 31: the claim store contract as its own package oduflow/claims (29 names, each still declared in oduflow as an alias: counted twice) and the file store as oduflow/filestore (Store, Open); + 33: oduflow's ErrorCode, its 29 Code* values and the 3 typed errors; + 3: Store and its optional capabilities ClaimLockReader, WindowedStore

// budgets are the per-package targets; they add up to totalBudget.
var budgets = map[string]int{
	"salt":              67, // Option -> ClientOption, EventOption, CommonOption, TokenOption; + CheckUserKey; + JobPublish, EventBusPermissionError, ErrEventBusPermission (later Salt, issue 18)
	"profiles":          19, // + the profile table: Table, DefaultTable, LoadTable, ParseTable, ErrInvalidTable, TableError, IDPolicy, IDsSeeds, IDsSalt
	"receipt":           34, // + Code (a receipt's refusal code; fencing); + ValidateSeedMinionID (the seeds' id policy)
	"oduflow":           48, // + StatusWindowsError (New refuses, never changes, a store with other status windows); - 60: the aliases of claims and filestore and the Code* constants (now claims') removed at 0.5; + WithProfiles, CodeProfileTableMismatch; + CodeFenceExhausted; + ErrorCode and its 29 Code* constants; NeedsConfirmationError, UncertainError, WorkerLaunchError; Store, ClaimLockReader, WindowedStore (the store contract, compiler-checked)
	"oduflow/catalog":   23,
	"oduflow/claims":    60, // + the 30 Code* constants beside their type ErrorCode (one name per concept); + ChangeFeed; the store contract, moved out of oduflow (which keeps an alias of each): Claim and its encoding (Decode, Protocol), Phase and its 5 values, ErrorCode and CodeLegacyError, MaxFenceToken, the 8 store sentinels, ClaimStore, Lease, Leases, Store and the 4 optional capabilities with Liveness
	"oduflow/filestore": 6,  // + Option, WithStatusWindows (windows at construction; Open shows no internal type); + OpenExisting, ErrNoStore (readers); Store (oduflow.FileClaimStore) and Open (oduflow.OpenFileClaimStore)
}

// supportBudgets are the budgets of the other public packages: the count only.
var supportBudgets = map[string]int{
	".":                              0,  // the root package: documentation only
	"oduflow/etcdstore":              23, // + WithStatusWindows (windows at construction)
	"oduflow/oduflowtest":            13,
	"oduflow/oduflowtest/fakeminion": 33, // + WithProfileTable (a minion's own profile table); fencing options (+ WithFenceMark); + WithRuntimeGuardFailure, WithRunRefusal; + WithGuardForms, GuardFailureReasons (Salt's forms); + WithoutRunProof, WithUnsignedRunReturn (signed run returns)
	"oduflow/oduflowtest/simenv":     8,  // + Client, DispatcherOn (a test's own timeouts), WaitVerified; the simulator with fake minions and Dispatchers on it (adapters, services)
	"salt/salttest":                  33, // + fleets: MinionBehavior, WithEventReaderBuffer; StallEventBus; Generation and its 3 values, WithGeneration
	"receipt/proof":                  19, // the receipt proof: Verify (dispatcher), Sign (test minions), nonces, reasons
	"salt/saltcmd":                   35, // the general client: Run, Async/Watch, Batch, states, decoders
}

// pending packages are still being reduced: their overruns are logged, not
// failed. It is empty: every package is held to its budget, and the total is
// enforced as well.
var pending = map[string]bool{}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

func TestExportedSurface(t *testing.T) {
	root := moduleRoot(t)
	pkgs, err := readLibrarySurface(root, libraryModules)
	if err != nil {
		t.Fatal(err)
	}
	used, err := usedNames(root, modPath, keys(budgets))
	if err != nil {
		t.Fatal(err)
	}
	allow, err := readAllowlist("allowlist.txt")
	if err != nil {
		t.Fatal(err)
	}
	logCounts(t, pkgs)
	problems, notes := budgetProblems(pkgs, used, allow, budgets, totalBudget, pending)
	for _, n := range notes {
		t.Log(n)
	}
	problems = append(problems, coverageProblems(pkgs, budgets, supportBudgets)...)
	problems = append(problems, methodProblems(pkgs, methodBudgets)...)
	for _, p := range problems {
		t.Error(p)
	}
}

// methodBudgets are the budgets of the exported methods of exported types, per budgeted package (a
// method is as much a promise as a name: the top-level budget used to let them grow unseen). Set at
// their counts of 2026-12-07, the day they were first counted.
var methodBudgets = map[string]int{
	"salt": 32, "profiles": 18, "receipt": 13, "oduflow": 28, // + StatusWindowsError.Error, Unwrap
	"oduflow/catalog": 33, "oduflow/claims": 11,
	"oduflow/filestore": 16,
}

// methodProblems reports each budgeted package whose exported methods exceed their budget.
func methodProblems(pkgs map[string]pkgInfo, budgets map[string]int) []string {
	var problems []string
	for _, p := range keys(budgets) {
		if n := len(pkgs[p].methods); n > budgets[p] {
			problems = append(problems, fmt.Sprintf("%s exports %d methods, budget %d (%s)", p, n, budgets[p],
				strings.Join(pkgs[p].methods, " ")))
		}
	}
	return problems
}

// logCounts prints the count of every package (budgeted, other, example).
func logCounts(t *testing.T, pkgs map[string]pkgInfo) {
	t.Helper()
	sum := 0
	for _, p := range keys(pkgs) {
		info := pkgs[p]
		tag := ""
		b, lib := budgets[p]
		sb, sup := supportBudgets[p]
		switch {
		case lib:
			tag = " (budget " + itoa(b) + ")"
			sum += len(info.names)
		case sup:
			tag = " (budget " + itoa(sb) + ", support)"
		case info.example:
			tag = " (example, not budgeted)"
		case info.command:
			tag = " (program, not budgeted)"
		}
		t.Logf("%-32s %3d%s, %d methods, %d deprecated", p, len(info.names), tag, len(info.methods), len(info.deprecated))
	}
	t.Logf("%-32s %3d (target %d)", "budgeted packages", sum, totalBudget)
}

// TestSurfaceCheckerCatches runs the checker on a small module written for
// the occasion, so that each kind of violation is shown to fail.
func TestSurfaceCheckerCatches(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.22\n")
	write("lib/lib.go", "package lib\n\nconst A, b = 1, 2\n\ntype T struct{}\n\nfunc (T) M() {}\n\nfunc F() {}\n\nvar V, W int\n")
	write("lib/lib_other.go", "//go:build ignore\n\npackage lib\n\nfunc F() {}\n")
	write("lib/lib_test.go", "package lib\n\nfunc Hidden() {}\n\nfunc ExampleF() { F() }\n")
	write("lib/x_test.go", "package lib_test\n\nimport l \"example.com/m/lib\"\n\nfunc ExampleT() { _ = l.T{} }\n\nfunc TestNot() { _ = l.V }\n")
	write("internal/hid/hid.go", "package hid\n\nfunc Hid() {}\n")
	write("examples/app/main.go", "package main\n\nimport \"example.com/m/lib\"\n\nfunc Exported() {}\n\nfunc main() { _ = lib.A }\n")
	write("nested/go.mod", "module example.com/n\n")
	write("nested/n.go", "package n\n\nfunc N() {}\n")
	write("lib/testdata/x.go", "package x\n\nfunc X() {}\n")
	write("allow.txt", "# reviewed\nlib.W  # kept for compatibility\n")
	write("helper/helper.go", "package helper\n\nfunc H() {}\n\nfunc I() {}\n")
	write("cmd/tool/main.go", "package main\n\nfunc Exported() {}\n\nfunc main() {}\n")

	pkgs, err := readSurface(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(keys(pkgs), ","); got != "cmd/tool,examples/app,helper,lib" {
		t.Fatalf("packages %s, want cmd/tool,examples/app,helper,lib (internal, testdata and nested modules skipped)", got)
	}
	if !pkgs["cmd/tool"].command || pkgs["helper"].command || pkgs["lib"].command {
		t.Fatal("only cmd/tool is a program")
	}
	lib := map[string]int{"lib": 5}
	if p := coverageProblems(pkgs, lib, map[string]int{"helper": 2}); len(p) != 0 {
		t.Fatalf("every public package budgeted: want no problem, got %q", p)
	}
	if p := coverageProblems(pkgs, lib, nil); len(p) != 1 || !strings.Contains(p[0], "helper") || !strings.Contains(p[0], "no API budget") {
		t.Fatalf("want the unbudgeted package reported, got %q", p)
	}
	if p := coverageProblems(pkgs, lib, map[string]int{"helper": 1}); len(p) != 1 || !strings.Contains(p[0], "budget 1") {
		t.Fatalf("want the support package over its budget reported, got %q", p)
	}
	if p := coverageProblems(pkgs, lib, map[string]int{"helper": 2, "gone": 1}); len(p) != 1 || !strings.Contains(p[0], "gone not found") {
		t.Fatalf("want the vanished package reported, got %q", p)
	}
	if p := coverageProblems(pkgs, lib, map[string]int{"helper": 2, "lib": 5}); len(p) != 1 || !strings.Contains(p[0], "two budgets") {
		t.Fatalf("want the double budget reported, got %q", p)
	}
	if p := coverageProblems(pkgs, lib, map[string]int{"helper": 2, "cmd/tool": 1}); len(p) != 1 || !strings.Contains(p[0], "program") {
		t.Fatalf("want the program's budget reported, got %q", p)
	}
	if got := strings.Join(pkgs["lib"].names, ","); got != "A,F,T,V,W" {
		t.Fatalf("lib names %s, want A,F,T,V,W", got)
	}
	if !pkgs["examples/app"].example {
		t.Fatal("examples/app not marked as an example")
	}
	withNested, err := readLibrarySurface(root, []string{"nested"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(keys(withNested), ","); got != "cmd/tool,examples/app,helper,lib,nested" {
		t.Fatalf("packages with the nested library module %s, want cmd/tool,examples/app,helper,lib,nested", got)
	}
	if got := strings.Join(withNested["nested"].names, ","); got != "N" {
		t.Fatalf("nested names %s, want N", got)
	}
	used, err := usedNames(root, "example.com/m", []string{"lib"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(keys(used["lib"]), ","); got != "A,F,T" {
		t.Fatalf("used %s, want A,F,T (V is used by a test, not an example)", got)
	}
	allow, err := readAllowlist(filepath.Join(root, "allow.txt"))
	if err != nil {
		t.Fatal(err)
	}
	check := func(budget, total int, allow []allowEntry, pending map[string]bool) (problems, notes []string) {
		return budgetProblems(pkgs, used, allow, map[string]int{"lib": budget}, total, pending)
	}
	if p, _ := check(5, 5, allow, nil); len(p) != 1 || !strings.Contains(p[0], "neither used") || !strings.Contains(p[0], ": V") {
		t.Fatalf("want only V reported as unused, got %q", p)
	}
	withV := append(allow, allowEntry{pkg: "lib", name: "V", reason: "r", line: 3})
	if p, _ := check(5, 5, withV, nil); len(p) != 0 {
		t.Fatalf("want no problem, got %q", p)
	}
	if p, _ := check(4, 5, withV, nil); len(p) != 1 || !strings.Contains(p[0], "budget 4") {
		t.Fatalf("want the package budget reported, got %q", p)
	}
	if p, _ := check(5, 4, withV, nil); len(p) != 1 || !strings.Contains(p[0], "target 4") {
		t.Fatalf("want the total reported, got %q", p)
	}
	stale := append(withV, allowEntry{pkg: "lib", name: "Gone", reason: "r", line: 4})
	if p, _ := check(5, 5, stale, nil); len(p) != 1 || !strings.Contains(p[0], "Gone") {
		t.Fatalf("want the stale entry reported, got %q", p)
	}
	if p, n := check(4, 4, allow, map[string]bool{"lib": true}); len(p) != 0 || len(n) != 3 {
		t.Fatalf("pending package: want 3 notes and no problem, got %q / %q", p, n)
	}
	write("bad.txt", "lib.V\n")
	if _, err := readAllowlist(filepath.Join(root, "bad.txt")); err == nil {
		t.Fatal("an allowlist line without a reason was accepted")
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

// TestSurfaceCountsMethodsNotDeprecated: exported methods of exported types are counted apart, a name
// whose doc says "Deprecated:" is counted in neither (nor are its methods), unexported receivers are not.
func TestSurfaceCountsMethodsNotDeprecated(t *testing.T) {
	dir := t.TempDir()
	src := `package p

// T is a type.
type T struct{}

// M is a method.
func (T) M() {}

func (*T) N() {}

type u struct{}

// X is exported but its receiver is not.
func (u) X() {}

// Old is the old name.
//
// Deprecated: use T.
type Old = T

// D is a type whose methods go with it.
//
// Deprecated: gone at 0.5.
type D struct{}

func (D) M() {}

// New makes a T.
func New() T { return T{} }
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	sf, _, err := exportedSurface(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sf.names, " "); got != "New T" {
		t.Errorf("names %q, want \"New T\"", got)
	}
	if got := strings.Join(sf.methods, " "); got != "T.M T.N" {
		t.Errorf("methods %q, want \"T.M T.N\"", got)
	}
	if got := strings.Join(sf.deprecated, " "); got != "D Old" {
		t.Errorf("deprecated %q, want \"D Old\"", got)
	}
}
