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
	root := moduleRoot(t)
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
		dir := filepath.Join(root, rel)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			n := e.Name()
			if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			foreign := map[string]bool{} // local names of cockroachdb imports
			for _, im := range f.Imports {
				p, _ := strconv.Unquote(im.Path.Value)
				if !strings.HasPrefix(p, "github.com/cockroachdb/") {
					continue
				}
				name := p[strings.LastIndex(p, "/")+1:]
				if im.Name != nil {
					name = im.Name.Name
				}
				foreign[name] = true
			}
			if len(foreign) == 0 {
				continue
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
						ts, ok := spec.(*ast.TypeSpec)
						if !ok || !ts.Name.IsExported() {
							continue
						}
						if st, ok := ts.Type.(*ast.StructType); ok {
							for _, fld := range st.Fields.List {
								exported := len(fld.Names) == 0
								for _, id := range fld.Names {
									exported = exported || id.IsExported()
								}
								if exported && mentions(fld.Type) {
									bad = append(bad, rel+": field of "+ts.Name.Name)
								}
							}
						} else if mentions(ts.Type) {
							bad = append(bad, rel+": type "+ts.Name.Name)
						}
					}
				}
			}
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Fatalf("cockroachdb types in the public API:\n%s", strings.Join(bad, "\n"))
	}
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
