package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The vocabulary (models/domain) is database-free, and views speak it
// instead of the store: neither reaches GORM or database/sql through any
// import, and views never import models (DESIGN.md's arrows; L8).
func TestVocabularyLayout(t *testing.T) {
	deps := func(pkg string) []string {
		out, err := exec.Command("go", "list", "-deps", "./"+pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps ./%s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	db := func(dep string) bool {
		return dep == "database/sql" || strings.HasPrefix(dep, "gorm.io/") ||
			strings.HasPrefix(dep, "github.com/jackc/") || strings.HasPrefix(dep, "github.com/glebarez/")
	}
	domainDeps := deps("models/domain")
	if len(domainDeps) < 5 {
		t.Fatalf("go list -deps found %d packages under models/domain: the dependencies are not being read", len(domainDeps))
	}
	for _, d := range domainDeps {
		if db(d) {
			t.Errorf("models/domain depends on %s: the vocabulary must not reach a database", d)
		}
		if rel, ours := strings.CutPrefix(d, module); ours && rel != "models/domain" && rel != "models/nodespec" && rel != "models/publicip" {
			t.Errorf("models/domain depends on %s: of ours, the vocabulary imports only the node-spec parsers and the address registry", rel)
		}
	}
	viewDeps := deps("views")
	if !slices.Contains(viewDeps, module+"models/domain") {
		t.Errorf("views does not depend on models/domain: the dependency list is not being read")
	}
	for _, d := range viewDeps {
		if db(d) {
			t.Errorf("views depends on %s: a view must not reach a database", d)
		}
		if d == module+"models" {
			t.Errorf("views depends on models: views speak the vocabulary (models/domain), never the store")
		}
	}
}

// rawLifecycleExceptions are the places in web, views and jobs that may
// still compare a lifecycle field themselves, each with why. Keyed by
// "dir/file.go:function"; a key that no longer matches a finding fails
// the test, so the list only shrinks.
var rawLifecycleExceptions = map[string]string{
	"views/clusters.go:problemClass": "colours the problem banner by the tone web chose (a status string), as statusClass " +
		"does for badges: a word-to-colour table, no decision",
	"web/clusters_status.go:progressView": "chooses the progress line's words for each starting phase (provisioning, " +
		"installing, verifying); whether a line shows at all is Lifecycle.Ending",
}

// A lifecycle decision — "may X happen now", "is it stopped", "was a
// terminate asked for" — is made by the vocabulary (models/domain's
// Lifecycle and NodeStatus methods), never by comparing a status field
// with a status constant or a request timestamp with nil in web, views or
// jobs: the page that offers a button and the use case that guards it ask
// the same method, so they cannot disagree (L6, L7, L10, X5, X13, X15).
func TestNoLifecycleDecisionsOnRawFields(t *testing.T) {
	consts := lifecycleConstants(t)
	// The request marks and the billing hold: a page or job that tests one
	// decides what may happen. ReadyAt, StoppedAt and the episode's start
	// are also moments shown to people ("stopped since 14:02"), so their
	// nil checks guard formatting; decisions on them are Lifecycle's
	// (EverReady, OnceUp, StoppedAtProvider, CanRecoverNow).
	stamps := regexp.MustCompile(`^(\w+RequestedAt|UnbilledAt)$`)
	isStatusConst := func(e ast.Expr) bool {
		for {
			if c, ok := e.(*ast.CallExpr); ok && len(c.Args) == 1 { // string(models.StatusX), models.ClusterStatus(x)
				e = c.Args[0]
				continue
			}
			if p, ok := e.(*ast.ParenExpr); ok {
				e = p.X
				continue
			}
			break
		}
		s, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		pkg, ok := s.X.(*ast.Ident)
		return ok && (pkg.Name == "models" || pkg.Name == "domain") && consts[s.Sel.Name]
	}
	isNil := func(e ast.Expr) bool { id, ok := e.(*ast.Ident); return ok && id.Name == "nil" }
	isStamp := func(e ast.Expr) bool { s, ok := e.(*ast.SelectorExpr); return ok && stamps.MatchString(s.Sel.Name) }
	isStatusField := func(e ast.Expr) bool {
		if c, ok := e.(*ast.CallExpr); ok && len(c.Args) == 1 {
			e = c.Args[0]
		}
		s, ok := e.(*ast.SelectorExpr)
		return ok && (s.Sel.Name == "Status" || s.Sel.Name == "StoppedFrom")
	}

	var findings []string
	used := map[string]bool{}
	scanned := 0
	for _, dir := range []string{"web", "views", "jobs"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			scanned++
			for _, d := range file.Decls {
				fn := "(top level)"
				if fd, ok := d.(*ast.FuncDecl); ok {
					fn = fd.Name.Name
				}
				key := filepath.ToSlash(f) + ":" + fn
				report := func(n ast.Node, what string) {
					if _, ok := rawLifecycleExceptions[key]; ok {
						used[key] = true
						return
					}
					findings = append(findings, fset.Position(n.Pos()).String()+" ("+fn+"): "+what)
				}
				ast.Inspect(d, func(n ast.Node) bool {
					switch x := n.(type) {
					case *ast.BinaryExpr:
						if x.Op != token.EQL && x.Op != token.NEQ {
							return true
						}
						switch {
						case isStatusConst(x.X) || isStatusConst(x.Y):
							report(x, "compares a status with a lifecycle constant")
						case (isStamp(x.X) && isNil(x.Y)) || (isStamp(x.Y) && isNil(x.X)):
							report(x, "compares a lifecycle timestamp with nil")
						}
					case *ast.SwitchStmt:
						if x.Tag == nil || !isStatusField(x.Tag) {
							return true
						}
						for _, c := range x.Body.List {
							if slices.ContainsFunc(c.(*ast.CaseClause).List, isStatusConst) {
								report(x, "switches on a status field over lifecycle constants")
								break
							}
						}
					}
					return true
				})
			}
		}
	}
	if scanned < 50 {
		t.Fatalf("scanned %d files: web, views and jobs are not being read", scanned)
	}
	sort.Strings(findings)
	for _, f := range findings {
		t.Errorf("%s: ask the vocabulary (models/domain) instead", f)
	}
	for key := range rawLifecycleExceptions {
		if !used[key] {
			t.Errorf("exception %s matches nothing any more: remove it", key)
		}
	}
}

// lifecycleConstants are the names of the cluster and node status
// constants the vocabulary declares (ClusterStatus and NodeStatus).
func lifecycleConstants(t *testing.T) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string]bool{}
	files, _ := filepath.Glob("models/domain/*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				v := s.(*ast.ValueSpec)
				if id, ok := v.Type.(*ast.Ident); ok && (id.Name == "ClusterStatus" || id.Name == "NodeStatus") {
					for _, n := range v.Names {
						out[n.Name] = true
					}
				}
			}
		}
	}
	for _, want := range []string{"StatusReady", "StatusStopped", "NodeDown", "NodeJoining", "NodeTerminating"} {
		if !out[want] {
			t.Fatalf("the vocabulary's status constants were not found (no %s among %d)", want, len(out))
		}
	}
	return out
}
