package apisurface_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// No cockroachdb type in the public API: no exported function, and no exported method of an exported type,
// of a public package (examples and programs excepted) names a type of github.com/cockroachdb/... in its
// signature, and no exported struct field has one. The library uses cockroachdb/errors inside; callers
// see the standard error interface only.
func TestNoCockroachTypeInPublicAPI(t *testing.T) {
	bad := publicMentions(t, moduleRoot(t), func(p string) bool { return strings.HasPrefix(p, "github.com/cockroachdb/") }, nil)
	if len(bad) > 0 {
		t.Fatalf("cockroachdb types in the public API:\n%s", strings.Join(bad, "\n"))
	}
}

// No internal type in the public API: no exported function, exported method of an exported type, exported
// struct field or exported type of a public package names a type of an internal package (a package with
// an "internal" path element): a caller could not name it, and a test hook would be part of the API.
// The one exception is an opaque option type, listed in opaqueOptions with the reason: a func type whose
// argument is internal, so only the package's With* functions (and the module's own code) make one.
func TestNoInternalTypeInPublicAPI(t *testing.T) {
	bad := publicMentions(t, moduleRoot(t), isInternalPath, opaqueOptions)
	if len(bad) > 0 {
		t.Fatalf("internal types in the public API:\n%s", strings.Join(bad, "\n"))
	}
}

// opaqueOptions are the exported types (package dir: type) allowed to be a func of an internal type.
var opaqueOptions = map[string]string{
	// filestore.Option is func(*filestorehook.Config): callers get options from WithStatusWindows only;
	// the module's tests build their crash and clock hooks (filestorehook.WithStage, WithClock) as values
	// of the same underlying type, so no hook is a name of the store's API (go doc shows none on Open).
	"oduflow/filestore: type Option": "test hooks reach Open without an exported hook",
}

func isInternalPath(p string) bool {
	return strings.Contains(p, "/internal/") || strings.HasSuffix(p, "/internal")
}

// publicMentions lists the exported declarations of the public packages (examples and programs excepted)
// whose signature, exported field or type definition names a type of an import for which foreign is true.
// allowFunc names type definitions allowed to be a func type mentioning one.
func publicMentions(t *testing.T, root string, foreignPath func(string) bool, allowFunc map[string]string) []string {
	t.Helper()
	pkgs, err := readLibrarySurface(root, libraryModules)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	fset := token.NewFileSet()
	for rel, info := range pkgs {
		if info.example || info.command {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			n := e.Name()
			if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(root, rel, n), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			bad = append(bad, fileMentions(rel, f, foreignPath, allowFunc)...)
		}
	}
	sort.Strings(bad)
	return bad
}

// fileMentions is publicMentions for one parsed file of package directory rel.
func fileMentions(rel string, f *ast.File, foreignPath func(string) bool, allowFunc map[string]string) []string {
	foreign := map[string]bool{} // local names of the foreign imports
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if !foreignPath(p) {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		foreign[name] = true
	}
	if len(foreign) == 0 {
		return nil
	}
	mentions := func(node ast.Node) bool {
		found := false
		ast.Inspect(node, func(x ast.Node) bool {
			if sel, ok := x.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && foreign[id.Name] {
					found = true
				}
			}
			return !found
		})
		return found
	}
	var bad []string
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
				continue
			}
			if mentions(d.Type) {
				bad = append(bad, rel+": func "+d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch sp := spec.(type) {
				case *ast.TypeSpec:
					if sp.Name.IsExported() {
						bad = append(bad, typeMentions(rel, sp, mentions, allowFunc)...)
					}
				case *ast.ValueSpec:
					for _, id := range sp.Names {
						if id.IsExported() && sp.Type != nil && mentions(sp.Type) {
							bad = append(bad, rel+": var or const "+id.Name)
						}
					}
				}
			}
		}
	}
	return bad
}

// typeMentions checks one exported type: a struct's exported fields, an interface's methods, any other
// definition or alias whole (a func type only when allowFunc does not list it).
func typeMentions(rel string, ts *ast.TypeSpec, mentions func(ast.Node) bool, allowFunc map[string]string) []string {
	var bad []string
	switch tt := ts.Type.(type) {
	case *ast.StructType:
		for _, fld := range tt.Fields.List {
			exported := len(fld.Names) == 0
			for _, id := range fld.Names {
				exported = exported || id.IsExported()
			}
			if exported && mentions(fld.Type) {
				bad = append(bad, rel+": field of "+ts.Name.Name)
			}
		}
	case *ast.FuncType:
		if _, ok := allowFunc[rel+": type "+ts.Name.Name]; !ok && mentions(tt) {
			bad = append(bad, rel+": type "+ts.Name.Name)
		}
	default:
		if mentions(ts.Type) {
			bad = append(bad, rel+": type "+ts.Name.Name)
		}
	}
	return bad
}

func exportedRecv(r *ast.FieldList) bool {
	if r == nil || len(r.List) == 0 {
		return false
	}
	x := r.List[0].Type
	if s, ok := x.(*ast.StarExpr); ok {
		x = s.X
	}
	if ix, ok := x.(*ast.IndexExpr); ok {
		x = ix.X
	}
	id, ok := x.(*ast.Ident)
	return ok && id.IsExported()
}

// A caller needs no cockroachdb package to handle the library's errors: no file under examples/ (programs,
// the controller module, their tests) imports github.com/cockroachdb/..., so the examples show that the
// standard library's errors.Is/As and fmt are enough.
func TestExamplesNeedNoCockroach(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	var bad []string
	err := filepath.WalkDir(filepath.Join(root, "examples"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); strings.HasPrefix(p, "github.com/cockroachdb/") {
				rel, _ := filepath.Rel(root, path)
				bad = append(bad, filepath.ToSlash(rel)+" imports "+p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Fatalf("examples import cockroachdb (use the standard library's errors and fmt):\n%s", strings.Join(bad, "\n"))
	}
}
