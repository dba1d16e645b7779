package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs/architecture.md's Layout block names every package directory of the tree and
// every scheduled job, and nothing that is gone.
func TestArchitectureLayout(t *testing.T) {
	readme, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "## Layout\n\n```\n")
	block, _, ok2 := strings.Cut(rest, "```\n")
	if !ok || !ok2 {
		t.Fatal("docs/architecture.md has no Layout block")
	}
	named := map[string]bool{}
	top := ""
	for _, line := range strings.Split(block, "\n") {
		field := strings.Fields(line)
		if len(field) == 0 || !strings.HasSuffix(field[0], "/") {
			continue
		}
		dir := strings.TrimSuffix(field[0], "/")
		if strings.HasPrefix(line, "  ") {
			dir = top + "/" + dir
		} else {
			top = dir
		}
		named[dir] = true
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			t.Errorf("the Layout names %s/, which is not a directory", dir)
		}
		// A test double in fake/ is named on its parent's line.
		if strings.Contains(line, "fake/") {
			named[dir+"/fake"] = true
		}
	}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		dir := filepath.Dir(path)
		if strings.HasSuffix(path, ".go") && dir != "." && !named[dir] {
			named[dir] = true // report once
			t.Errorf("package directory %s/ is missing from docs/architecture.md's Layout", dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	jobsLine := regexp.MustCompile(`(?s)jobs/ .*?\nweb/`).FindString(block)
	names := regexp.MustCompile(`func \([a-z]* ?\*?[A-Z]\w*\) Name\(\) string \{ return "([a-z-]+)" \}`)
	files, _ := filepath.Glob("jobs/*.go")
	seen := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, _ := os.ReadFile(f)
		for _, m := range names.FindAllStringSubmatch(string(src), -1) {
			seen++
			if !regexp.MustCompile(`\b` + regexp.QuoteMeta(m[1]) + `\b`).MatchString(jobsLine) {
				t.Errorf("job %q (%s) is missing from docs/architecture.md's Layout", m[1], f)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("found %d jobs: the job names are not being read", seen)
	}
}
