package guard

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// registrations are the methods that hand a function to client-go, or to the cache, to run on
// an informer's goroutine, with the guard their argument must be.
var registrations = map[string]string{
	"AddEventHandler":                 "Handler",
	"AddEventHandlerWithResyncPeriod": "Handler",
	"AddEventHandlerWithOptions":      "Handler",
	"AddHandler":                      "Handler",
	"SetTransform":                    "Transform",
}

// Every informer handler and transform the module registers, outside tests, is wrapped where
// it is registered: the call's first argument is a call of guard.Handler (guard.Transform for
// SetTransform). A handler or transform not wrapped would let one object's panic end the
// replica (doc.go), so this reads the source and names each registration that is not.
func TestEveryHandlerIsGuarded(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module (the e2e tools')
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		inGuard := f.Name.Name == "guard"
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			want, ok := registrations[sel.Sel.Name]
			if !ok || guardCall(call.Args[0], want, inGuard) {
				return true
			}
			rel, _ := filepath.Rel(root, fset.Position(call.Pos()).Filename)
			t.Errorf("%s:%d: %s's argument is not a guard.%s(...) call: wrap it where it is registered, or a panic in it ends the replica",
				rel, fset.Position(call.Pos()).Line, sel.Sel.Name, want)
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files under %s: not the module", files, root)
	}
}

// guardCall reports whether e is a call of guard.<name> (or of <name> in package guard).
func guardCall(e ast.Expr, name string, inGuard bool) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	switch f := call.Fun.(type) {
	case *ast.SelectorExpr:
		pkg, ok := f.X.(*ast.Ident)
		return ok && pkg.Name == "guard" && f.Sel.Name == name
	case *ast.Ident:
		return inGuard && f.Name == name
	}
	return false
}

// moduleRoot is the directory of the module's go.mod, above the test's.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/ringfire/ringfire\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod of github.com/ringfire/ringfire above the test's directory")
		}
		dir = parent
	}
}
