package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// citation is one parenthesised group of the code that cites rules only,
// e.g. "(L4)", "(OP1, X5)", "(issue 23, OP1, L3–L4)"; tagPart is one of its
// rule tags (a range names both ends).
var (
	citation = regexp.MustCompile(`\(([^()\n]{1,200})\)`)
	tagPart  = regexp.MustCompile(`^([A-Z]{1,3}\d{1,2})(?:[–-]([A-Z]{1,3})?(\d{1,2}))?$`)
	defined  = regexp.MustCompile(`(?m)^\| ([A-Z]{1,3}\d{1,2}) \|.*\|(.*)\|$`)
	wherePat = regexp.MustCompile("`([^`]+)`")
)

// Every rule tag the code cites is defined in docs/rules.md, and every file
// that page names as a rule's home exists (issue 22 item 8).
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
	got := strings.Join(citedTags("a (L4) b (OP1, X5) c (issue 23, OP1, L3–L4) d (B1–B7) e (24 GB PCIe) f (A10 and more)"), " ")
	if want := "L4 OP1 X5 OP1 L3 L4 B1 B7"; got != want {
		t.Fatalf("citedTags = %q, want %q", got, want)
	}
}
