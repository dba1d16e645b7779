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

// TestRoutesAreOneTable keeps routes.go the one table of routes:
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

// Every method and path is registered once: a second
// registration silently replaces the first handler and its middleware, and
// echo's own route list keeps one entry per method and path, so the check
// reads routes.go: each group's prefix, each registration's full path.
func TestRoutesRegisteredOnce(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "routes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	methods := []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "Any"}
	prefix := map[string]string{"e": ""} // receiver name → its path prefix
	seen := map[string]token.Position{}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		switch x := node.(type) {
		case *ast.AssignStmt: // g := parent.Group("/prefix", …)
			if len(x.Lhs) != 1 || len(x.Rhs) != 1 {
				return true
			}
			call, ok := x.Rhs[0].(*ast.CallExpr)
			if !ok {
				return true
			}
			name, ok := x.Lhs[0].(*ast.Ident)
			if !ok {
				return true
			}
			// newRouteGroup(e, "/prefix", …) or parent.Group("/prefix", …)
			if fn, ok := call.Fun.(*ast.Ident); ok && fn.Name == "newRouteGroup" && len(call.Args) >= 2 {
				if lit, ok := call.Args[1].(*ast.BasicLit); ok {
					prefix[name.Name] = strings.Trim(lit.Value, `"`)
				}
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Group" || len(call.Args) == 0 {
				return true
			}
			parent, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok {
				prefix[name.Name] = prefix[parent.Name] + strings.Trim(lit.Value, `"`)
			}
		case *ast.CallExpr: // g.GET("/path", …)
			sel, ok := x.Fun.(*ast.SelectorExpr)
			if !ok || !slices.Contains(methods, sel.Sel.Name) || len(x.Args) == 0 {
				return true
			}
			recv, ok := sel.X.(*ast.Ident)
			lit, ok2 := x.Args[0].(*ast.BasicLit)
			if !ok || !ok2 || lit.Kind != token.STRING {
				return true
			}
			p, known := prefix[recv.Name]
			if !known {
				return true
			}
			n++
			key := sel.Sel.Name + " " + p + strings.Trim(lit.Value, `"`)
			if first, dup := seen[key]; dup {
				t.Errorf("%s: %s is registered again (first at line %d)", fset.Position(x.Pos()), key, first.Line)
			}
			seen[key] = fset.Position(x.Pos())
		}
		return true
	})
	if n < 100 {
		t.Fatalf("read %d registrations: the table is not being read", n)
	}
}
