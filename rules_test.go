package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// citation is one parenthesised group of the code that cites rules only,
// e.g. "(L4)", "(OP1, X5)", "(OP1, L3–L4)"; tagPart is one of its
// rule tags (a range names both ends).
var (
	citation = regexp.MustCompile(`\(([^()\n]{1,200})\)`)
	tagPart  = regexp.MustCompile(`^([A-Z]{1,3}\d{1,2})(?:[–-]([A-Z]{1,3})?(\d{1,2}))?$`)
	defined  = regexp.MustCompile(`(?m)^\| ([A-Z]{1,3}\d{1,2}) \|.*\|(.*)\|$`)
	wherePat = regexp.MustCompile("`([^`]+)`")
)

// Every rule tag the code cites is defined in docs/rules.md, and every file
// that page names as a rule's home exists.
func TestRuleTagsAreDefined(t *testing.T) {
	doc, err := os.ReadFile("docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, m := range defined.FindAllStringSubmatch(string(doc), -1) {
		known[m[1]] = true
		for _, w := range wherePat.FindAllStringSubmatch(m[2], -1) {
			if _, err := os.Stat(w[1]); err != nil {
				t.Errorf("docs/rules.md says %s lives in %s, which is gone", m[1], w[1])
			}
		}
	}
	if len(known) < 80 {
		t.Fatalf("docs/rules.md defines %d rules; its table is not being read", len(known))
	}
	cited := map[string]string{} // tag → first file citing it
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || strings.HasSuffix(path, "_templ.go") || !(strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".templ")) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, tag := range citedTags(string(src)) {
			if _, ok := cited[tag]; !ok {
				cited[tag] = path
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(cited) < 50 {
		t.Fatalf("only %d tags cited: the scan is not finding the citations", len(cited))
	}
	for tag, path := range cited {
		if !known[tag] {
			t.Errorf("%s cites rule %s, which docs/rules.md does not define", path, tag)
		}
	}
}

// citedTags are the rule tags of src's citation groups: groups whose every
// comma-separated part is a tag, a tag range or an "issue …" reference.
func citedTags(src string) []string {
	var tags []string
	for _, g := range citation.FindAllStringSubmatch(src, -1) {
		var these []string
		ok := true
		for _, part := range strings.Split(g[1], ",") {
			part = strings.TrimSpace(part)
			m := tagPart.FindStringSubmatch(part)
			switch {
			case m != nil:
				these = append(these, m[1])
				if m[3] != "" {
					prefix := m[2]
					if prefix == "" {
						prefix = strings.TrimRight(m[1], "0123456789")
					}
					these = append(these, prefix+m[3])
				}
			case strings.HasPrefix(part, "issue"):
			default:
				ok = false
			}
			if !ok {
				break
			}
		}
		if ok {
			tags = append(tags, these...)
		}
	}
	return tags
}

func TestCitedTags(t *testing.T) {
	got := strings.Join(citedTags("a (L4) b (OP1, X5) c (OP1, L3–L4) d (B1–B7) e (24 GB PCIe) f (A10 and more)"), " ")
	if want := "L4 OP1 X5 OP1 L3 L4 B1 B7"; got != want {
		t.Fatalf("citedTags = %q, want %q", got, want)
	}
}

var decider = regexp.MustCompile(`^([a-z][a-z0-9/]*)\.(?:\((\*?)(\w+)\)\.)?(\w+)$`)

// Every row of docs/rules.md names the function that decides its rule, and
// each one exists: parsed from the package's non-test files (a method on a
// type alias is looked for on the aliased type, a function may be a
// package-level variable holding one).
func TestRulesNameDecidingFunctions(t *testing.T) {
	doc, err := os.ReadFile("docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]*declIndex{}
	index := func(dir string) *declIndex {
		if pkgs[dir] == nil {
			pkgs[dir] = parseDecls(t, dir)
		}
		return pkgs[dir]
	}
	rows := 0
	for _, line := range strings.Split(string(doc), "\n") {
		m := defined.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		cols := strings.Split(line, "|")
		if len(cols) != 6 {
			t.Errorf("docs/rules.md: %s has %d columns, want Rule, What holds, Decided by, Where", m[1], len(cols)-2)
			continue
		}
		rows++
		names := wherePat.FindAllStringSubmatch(cols[3], -1)
		if len(names) == 0 {
			t.Errorf("docs/rules.md: %s names no function deciding it", m[1])
		}
		for _, n := range names {
			d := decider.FindStringSubmatch(n[1])
			if d == nil {
				t.Errorf("docs/rules.md: %s: %q is not written pkg.Func or pkg.(*Type).Method", m[1], n[1])
				continue
			}
			dir := d[1]
			if dir == "main" {
				dir = "."
			}
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				t.Errorf("docs/rules.md: %s: package %s is not a directory", m[1], d[1])
				continue
			}
			if !index(dir).has(t, index, d[2] == "*", d[3], d[4]) {
				t.Errorf("docs/rules.md: %s is decided by %s, which %s does not declare", m[1], n[1], d[1])
			}
		}
	}
	if rows < 80 {
		t.Fatalf("only %d rules read: the table is not being read", rows)
	}
}

// declIndex is what a package declares: functions, package-level
// variables, methods by receiver ("*T.M" or "T.M") and type aliases to
// another package's type (alias name → directory and type).
type declIndex struct {
	funcs, vars, methods map[string]bool
	aliases              map[string][2]string
}

func (x *declIndex) has(t *testing.T, index func(string) *declIndex, ptr bool, recv, name string) bool {
	if recv == "" {
		return x.funcs[name] || x.vars[name]
	}
	key := recv + "." + name
	if ptr {
		key = "*" + key
	}
	if x.methods[key] {
		return true
	}
	if a, ok := x.aliases[recv]; ok {
		return index(a[0]).has(t, index, ptr, a[1], name)
	}
	return false
}

const modulePath = "github.com/clusterdeck/clusterdeck/"

func parseDecls(t *testing.T, dir string) *declIndex {
	t.Helper()
	x := &declIndex{funcs: map[string]bool{}, vars: map[string]bool{}, methods: map[string]bool{}, aliases: map[string][2]string{}}
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		imports := map[string]string{} // local name → directory in the module
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			rel, ok := strings.CutPrefix(p, modulePath)
			if !ok {
				continue
			}
			local := filepath.Base(rel)
			if imp.Name != nil {
				local = imp.Name.Name
			}
			imports[local] = rel
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil || len(d.Recv.List) == 0 {
					x.funcs[d.Name.Name] = true
					continue
				}
				typ, star := d.Recv.List[0].Type, ""
				if s, ok := typ.(*ast.StarExpr); ok {
					typ, star = s.X, "*"
				}
				if g, ok := typ.(*ast.IndexExpr); ok { // a generic receiver
					typ = g.X
				}
				if id, ok := typ.(*ast.Ident); ok {
					x.methods[star+id.Name+"."+d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.ValueSpec:
						if d.Tok == token.VAR {
							for _, n := range s.Names {
								x.vars[n.Name] = true
							}
						}
					case *ast.TypeSpec:
						if sel, ok := s.Type.(*ast.SelectorExpr); ok && s.Assign.IsValid() {
							if pkg, ok := sel.X.(*ast.Ident); ok && imports[pkg.Name] != "" {
								x.aliases[s.Name.Name] = [2]string{imports[pkg.Name], sel.Sel.Name}
							}
						}
					}
				}
			}
		}
	}
	return x
}
