package models_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// L4, L6, R2, R5, B6, L8: each constructor stores exactly
// the code the column and the API's lastError held before kinds were
// typed, and reads back as the same value.
func TestLastErrorCodes(t *testing.T) {
	cases := map[string]models.LastError{
		"timeout:agent":                 models.StepTimeout(models.StepAgent),
		"timeout:reserved":              models.StepTimeout(models.StepReserved),
		"node_lost:running":             models.NodeLostAt(models.StepRunning),
		"gpu_mismatch:node-1":           models.GPUMismatch("node-1"),
		"provider_rejected:validation":  models.ProviderRejected(models.RejectedValidation),
		"provider_rejected:no_capacity": models.ProviderRejected(models.RejectedNoCapacity),
		"install_failed:config":         models.InstallFailed(models.InstallConfig),
		"install_failed:node-0":         models.InstallFailed("node-0"),
		"check_failed:slurm":            models.CheckFailed("slurm"),
		"install_interrupted":           models.InstallInterrupted(),
		"node_down:node-1: stopped":     models.MachinesDown("node-1: stopped"),
		"recovery_exhausted":            models.RecoveryExhausted(),
		"resume_failed:timeout:agent":   models.ResumeFailed(models.StepTimeout(models.StepAgent)),
		"resume_cancelled:budget":       models.ResumeCancelled(models.StopByBudget),
		"verification_failed:node-2":    models.VerificationFailed("node-2"),
	}
	kinds := map[models.ErrorKind]bool{}
	for code, le := range cases {
		if le.String() != code {
			t.Errorf("%+v stores %q, want %q", le, le.String(), code)
		}
		if got := models.ParseLastError(code); got != le {
			t.Errorf("%q reads back as %+v, want %+v", code, got, le)
		}
		if !le.Kind.Known() {
			t.Errorf("%q: kind %q not declared", code, le.Kind)
		}
		kinds[le.Kind] = true
	}
	for _, k := range models.ErrorKinds {
		if !kinds[k] {
			t.Errorf("kind %s has no case here", k)
		}
	}
	if c := models.ResumeFailed(models.NodeLostAt(models.StepMesh)).Cause(); c != models.NodeLostAt(models.StepMesh) {
		t.Errorf("resume_failed's cause %+v", c)
	}
	if (models.LastError{}).String() != "" || models.ParseLastError("") != (models.LastError{}) {
		t.Error("no error is not the empty code")
	}
	if models.ErrorKind("exploded").Known() {
		t.Error("an undeclared kind reads as known")
	}
}

// Every ErrorKind constant declared in lasterror.go is in ErrorKinds, and
// nothing else is: the list the page's test walks is the whole set.
func TestErrorKindsListsEveryKind(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "domain/lasterror.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []models.ErrorKind
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, sp := range g.Specs {
			v := sp.(*ast.ValueSpec)
			if id, ok := v.Type.(*ast.Ident); ok && id.Name == "ErrorKind" {
				lit := v.Values[0].(*ast.BasicLit)
				declared = append(declared, models.ErrorKind(strings.Trim(lit.Value, `"`)))
			}
		}
	}
	if !reflect.DeepEqual(declared, models.ErrorKinds) {
		t.Errorf("declared kinds %v, ErrorKinds %v", declared, models.ErrorKinds)
	}
}

// Constructors only (L8): no lastError code is written as a
// string literal in jobs or models outside lasterror.go, so every code
// the page meets is a declared kind.
func TestNoFreeTextLastError(t *testing.T) {
	var alts []string
	for _, k := range models.ErrorKinds {
		alts = append(alts, regexp.QuoteMeta(string(k)))
	}
	code := regexp.MustCompile(`"(` + strings.Join(alts, "|") + `):|"(install_interrupted|recovery_exhausted)"`)
	event := regexp.MustCompile(`^\s*(Event[A-Za-z]+\s+Event|ClusterMail[A-Za-z]+)\s+=`) // events and mail topics share some names with kinds
	for _, dir := range []string{".", "domain", "../jobs"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Fatalf("no Go files in %s", dir)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") || filepath.Base(f) == "lasterror.go" {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(string(b), "\n") {
				if l := strings.TrimSpace(line); code.MatchString(l) && !strings.HasPrefix(l, "//") && !event.MatchString(l) {
					t.Errorf("%s:%d writes a lastError code as text; use its constructor: %s", f, i+1, strings.TrimSpace(line))
				}
			}
		}
	}
}
