package models_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// topLevel lists the exported top-level names (types, constants,
// variables, functions) of the non-test Go files of dir.
func topLevel(t *testing.T, dir string) map[string]bool {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				switch g := d.(type) {
				case *ast.FuncDecl:
					if g.Recv == nil && g.Name.IsExported() {
						out[g.Name.Name] = true
					}
				case *ast.GenDecl:
					for _, s := range g.Specs {
						switch sp := s.(type) {
						case *ast.TypeSpec:
							if sp.Name.IsExported() {
								out[sp.Name.Name] = true
							}
						case *ast.ValueSpec:
							for _, n := range sp.Names {
								if n.IsExported() {
									out[n.Name] = true
								}
							}
						}
					}
				}
			}
		}
	}
	return out
}

// Every name of the vocabulary is also a name of models (an alias, the
// same constant or table, or a thin wrapper), so code written against
// models.X keeps compiling while the vocabulary grows.
func TestEveryDomainNameInModels(t *testing.T) {
	vocab, store := topLevel(t, "domain"), topLevel(t, ".")
	if len(vocab) < 100 || !vocab["Lifecycle"] || !vocab["AppendPrice"] {
		t.Fatalf("read %d names from models/domain: the vocabulary is not being read", len(vocab))
	}
	for name := range vocab {
		if !store[name] {
			t.Errorf("domain.%s has no models.%s: add it to domain_aliases.go", name, name)
		}
	}
}
