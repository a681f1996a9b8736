package apisurface_test

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// pkgInfo is what the walk learns about one package directory: its exported
// top-level names (funcs without a receiver, types, consts and vars declared
// in non-test files; files for other platforms are read too, and a name
// declared in several of them counts once).
type pkgInfo struct {
	names []string
	// methods are the exported methods of exported types ("Type.Method"): part of the surface as much
	// as the names, budgeted apart (methodBudgets).
	methods []string
	// deprecated are the top-level names whose doc says "Deprecated:": kept for callers for a release,
	// counted in neither budget.
	deprecated []string
	example    bool // under examples/: counted and printed, never budgeted
	command    bool // package main elsewhere (a program): nothing can import it, never budgeted
}

// readSurface maps each package of the module at root (its directory relative
// to root, "." for the root) to its pkgInfo. It skips internal/ and testdata
// directories, hidden and underscore directories, and nested modules (a
// directory with its own go.mod).
func readSurface(root string) (map[string]pkgInfo, error) {
	out := map[string]pkgInfo{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if rel != "." {
			base := d.Name()
			if base == "internal" || base == "testdata" || base == "vendor" ||
				strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		sf, pkgName, err := exportedSurface(path)
		if err != nil {
			return err
		}
		if pkgName != "" {
			example := rel == "examples" || strings.HasPrefix(rel, "examples/")
			out[rel] = pkgInfo{names: sf.names, methods: sf.methods, deprecated: sf.deprecated, example: example,
				command: !example && pkgName == "main"}
		}
		return nil
	})
	return out, err
}

// readLibrarySurface is readSurface of the module at root plus that of each
// nested module in nested (directories relative to root), its packages keyed
// by their directory relative to root: the library's API is spread over the
// root module and the nested modules published with it (oduflow/etcdstore is
// its own module so that its etcd, grpc and zap dependencies stay out of the
// root module's graph), and a package must not escape its budget by moving
// into a go.mod of its own.
func readLibrarySurface(root string, nested []string) (map[string]pkgInfo, error) {
	out, err := readSurface(root)
	if err != nil {
		return nil, err
	}
	for _, m := range nested {
		pkgs, err := readSurface(filepath.Join(root, filepath.FromSlash(m)))
		if err != nil {
			return nil, err
		}
		for rel, info := range pkgs {
			out[path.Join(m, rel)] = info
		}
	}
	return out, nil
}

// surface is what exportedSurface reads of one package.
type surface struct{ names, methods, deprecated []string }

// isDeprecated reports whether a doc comment has a paragraph starting "Deprecated:" (the Go convention).
func isDeprecated(docs ...*ast.CommentGroup) bool {
	for _, d := range docs {
		if d == nil {
			continue
		}
		text := "\n" + d.Text()
		if strings.Contains(text, "\nDeprecated:") {
			return true
		}
	}
	return false
}

// recvTypeName is the name of a method's receiver type (T for T, *T, T[P] and *T[P]).
func recvTypeName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvTypeName(x.X)
	case *ast.IndexExpr:
		return recvTypeName(x.X)
	case *ast.IndexListExpr:
		return recvTypeName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}

// exportedSurface parses the non-test Go files of dir. pkgName is their package name, "" when dir holds
// no such file.
func exportedSurface(dir string) (sf surface, pkgName string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return surface{}, "", err
	}
	seen, methods, deprecated := map[string]bool{}, map[string]bool{}, map[string]bool{}
	add := func(name string, docs ...*ast.CommentGroup) {
		if isDeprecated(docs...) {
			deprecated[name] = true
			return
		}
		seen[name] = true
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return surface{}, "", err
		}
		pkgName = f.Name.Name
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				switch {
				case d.Recv == nil && d.Name.IsExported():
					add(d.Name.Name, d.Doc)
				case d.Recv != nil && d.Name.IsExported() && len(d.Recv.List) == 1:
					if t := recvTypeName(d.Recv.List[0].Type); ast.IsExported(t) && !isDeprecated(d.Doc) {
						methods[t+"."+d.Name.Name] = true
					}
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							add(s.Name.Name, d.Doc, s.Doc)
						}
					case *ast.ValueSpec:
						for _, id := range s.Names {
							if id.IsExported() {
								add(id.Name, d.Doc, s.Doc)
							}
						}
					}
				}
			}
		}
	}
	sorted := func(m map[string]bool) []string {
		out := make([]string, 0, len(m))
		for n := range m {
			out = append(out, n)
		}
		sort.Strings(out)
		return out
	}
	// A method of a deprecated type is not counted either.
	for m := range methods {
		if deprecated[m[:strings.IndexByte(m, '.')]] {
			delete(methods, m)
		}
	}
	return surface{names: sorted(seen), methods: sorted(methods), deprecated: sorted(deprecated)}, pkgName, nil
}

// usedNames returns, per package of targets (relative directories), the
// exported names that examples use: any selector pkg.Name in any Go file under
// examples/ (tests included), and in the body of any Example function of the
// module's test files; inside the package itself (an Example in package
// salt rather than salt_test), a bare identifier counts.
func usedNames(root, modPath string, targets []string) (map[string]map[string]bool, error) {
	byPath := map[string]string{} // import path -> target
	for _, t := range targets {
		byPath[modPath+"/"+t] = t
	}
	used := map[string]map[string]bool{}
	mark := func(pkg, name string) {
		if used[pkg] == nil {
			used[pkg] = map[string]bool{}
		}
		used[pkg][name] = true
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if b := d.Name(); path != root && (b == "testdata" || b == "vendor" || strings.HasPrefix(b, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		inExamples := strings.HasPrefix(rel, "examples/")
		isTest := strings.HasSuffix(path, "_test.go")
		if !inExamples && !isTest {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		local := map[string]string{} // file's name for an import -> target
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			t, ok := byPath[p]
			if !ok {
				continue
			}
			name := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			local[name] = t
		}
		self := "" // the target this file belongs to, when it is in package (not package_test)
		if dir := filepath.ToSlash(filepath.Dir(rel)); slices.Contains(targets, dir) && !strings.HasSuffix(f.Name.Name, "_test") {
			self = dir
		}
		visit := func(n ast.Node) {
			ast.Inspect(n, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.SelectorExpr:
					if id, ok := x.X.(*ast.Ident); ok {
						if t, ok := local[id.Name]; ok {
							mark(t, x.Sel.Name)
						}
					}
				case *ast.Ident:
					if self != "" && x.IsExported() {
						mark(self, x.Name)
					}
				}
				return true
			})
		}
		if inExamples {
			visit(f)
			return nil
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Example") {
				visit(fn.Body)
			}
		}
		return nil
	})
	return used, err
}

// allowEntry is one reviewed line of the allowlist.
type allowEntry struct {
	pkg, name, reason string
	line              int
}

// readAllowlist reads "pkg.Name  # reason" lines; blank lines and lines that
// start with "#" are comments. pkg is the package directory relative to the
// module root ("oduflow/catalog.Name"). A line without a reason is an error:
// every entry is reviewed.
func readAllowlist(path string) ([]allowEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []allowEntry
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		entry, reason, ok := strings.Cut(line, "#")
		entry, reason = strings.TrimSpace(entry), strings.TrimSpace(reason)
		if !ok || reason == "" {
			return nil, fmt.Errorf("%s:%d: %q has no reason (want \"pkg.Name  # reason\")", path, n, line)
		}
		i := strings.LastIndex(entry, ".")
		if i <= 0 || i == len(entry)-1 || strings.ContainsAny(entry, " \t") {
			return nil, fmt.Errorf("%s:%d: %q is not pkg.Name", path, n, entry)
		}
		out = append(out, allowEntry{pkg: entry[:i], name: entry[i+1:], reason: reason, line: n})
	}
	return out, sc.Err()
}

// budgetProblems checks the packages of budgets: each within its budget,
// their sum within total, every name used by an example or allowlisted, and
// every allowlist entry naming an exported name. Packages in pending are
// reported in notes instead of problems.
func budgetProblems(pkgs map[string]pkgInfo, used map[string]map[string]bool, allow []allowEntry,
	budgets map[string]int, total int, pending map[string]bool,
) (problems, notes []string) {
	report := func(pkg, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if pending[pkg] {
			notes = append(notes, "pending: "+msg)
		} else {
			problems = append(problems, msg)
		}
	}
	allowed := map[string]bool{}
	for _, a := range allow {
		key := a.pkg + "." + a.name
		if allowed[key] {
			report(a.pkg, "allowlist line %d: %s listed twice", a.line, key)
		}
		allowed[key] = true
		if _, budgeted := budgets[a.pkg]; !budgeted {
			problems = append(problems, fmt.Sprintf("allowlist line %d: %s is not in a budgeted package", a.line, key))
			continue
		}
		if !slices.Contains(pkgs[a.pkg].names, a.name) {
			report(a.pkg, "allowlist line %d: %s is not an exported name any more: drop the line", a.line, key)
		}
	}
	sum := 0
	var order []string
	for p := range budgets {
		order = append(order, p)
	}
	sort.Strings(order)
	for _, p := range order {
		info, ok := pkgs[p]
		if !ok {
			problems = append(problems, fmt.Sprintf("budgeted package %s not found", p))
			continue
		}
		n := len(info.names)
		sum += n
		if n > budgets[p] {
			report(p, "%s exports %d names, budget %d", p, n, budgets[p])
		}
		var loose []string
		for _, name := range info.names {
			if !used[p][name] && !allowed[p+"."+name] {
				loose = append(loose, name)
			}
		}
		if len(loose) > 0 {
			report(p, "%s: %d names neither used by an example nor in allowlist.txt: %s",
				p, len(loose), strings.Join(loose, " "))
		}
	}
	if sum > total {
		msg := fmt.Sprintf("budgeted packages export %d names in all, target %d", sum, total)
		if len(pending) > 0 {
			notes = append(notes, "pending: "+msg)
		} else {
			problems = append(problems, msg)
		}
	}
	return problems, notes
}

// coverageProblems checks that every public package of the module (neither an
// example nor a command) has a budget, in budgets (the library packages, which
// budgetProblems also checks) or in support (the other public packages: test
// helpers and the etcd store), and that each support package exists and stays
// within its budget. A new public package without a budget is a problem: its
// surface must be decided, not grown by accident.
func coverageProblems(pkgs map[string]pkgInfo, budgets, support map[string]int) []string {
	var problems []string
	for _, p := range keys(pkgs) {
		info := pkgs[p]
		_, lib := budgets[p]
		b, sup := support[p]
		switch {
		case info.example || info.command:
			if lib || sup {
				problems = append(problems, fmt.Sprintf("%s is an example or a program, not an API: drop its budget", p))
			}
		case lib && sup:
			problems = append(problems, fmt.Sprintf("%s has two budgets", p))
		case !lib && !sup:
			problems = append(problems, fmt.Sprintf("public package %s (%d exported names) has no API budget: add it to budgets or supportBudgets", p, len(info.names)))
		case sup && len(info.names) > b:
			problems = append(problems, fmt.Sprintf("%s exports %d names, budget %d", p, len(info.names), b))
		}
	}
	for _, p := range keys(support) {
		if _, ok := pkgs[p]; !ok {
			problems = append(problems, fmt.Sprintf("budgeted package %s not found", p))
		}
	}
	return problems
}
