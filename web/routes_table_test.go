package web

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRoutesAreOneTable keeps routes.go the one table of routes (issue 8):
// no other file of the package registers a route or a group.
func TestRoutesAreOneTable(t *testing.T) {
	registering := []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "Any", "Match", "Add", "Group", "Static", "StaticFS", "File", "RouteNotFound"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if name == "routes.go" || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && slices.Contains(registering, sel.Sel.Name) && len(call.Args) >= 1 {
				if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING && strings.HasPrefix(lit.Value, `"/`) {
					t.Errorf("%s: %s(%s…) registers a route outside routes.go", fset.Position(call.Pos()), sel.Sel.Name, lit.Value)
				}
			}
			return true
		})
	}
}
