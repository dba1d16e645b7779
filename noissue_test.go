package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// issueRef is a reference to an issue by number: "issue N", "Issue N
	// item M", "issues N and M", "issue #N".
	issueRef = regexp.MustCompile(`(?i)\bissues? #?\d+`)
	// otherTracker is what may stand right before one: another project's
	// name with its owner (NVIDIA/nccl, then the issue and its number) or a
	// named project (SkyPilot, dstack); a URL to an issue is not a match.
	otherTracker = regexp.MustCompile(`(?:[\w.-]+/[\w.-]+|SkyPilot|dstack|Kubernetes|Slurm|NCCL|Ray|templ|htmx|echo|gorm|Stripe|stripe-go|stripe-node|kin-openapi|oapi-codegen)[ \t]+$`)
)

// issueRefs are the references to this project's issues in src: what a
// reader who joins cannot look up. Rule tags say what the code keeps.
func issueRefs(src string) []string {
	var found []string
	for _, loc := range issueRef.FindAllStringIndex(src, -1) {
		start := strings.LastIndexByte(src[:loc[0]], '\n') + 1
		if otherTracker.MatchString(src[start:loc[0]]) {
			continue
		}
		found = append(found, src[loc[0]:loc[1]])
	}
	return found
}

func TestIssueRefs(t *testing.T) {
	for src, want := range map[string]int{
		"// the stall rule (iss\u0075e 26 item 6)":                     1,
		"// Iss\u0075e 24: verified":                                   1,
		"(iss\u0075es 4 and 5)":                                        1,
		"see iss\u0075e #12":                                           1,
		"// half speed (NVIDIA/nccl iss\u0075e 2409)":                  0,
		"NVIDIA/nccl-tests iss\u0075es 119, 252":                       0,
		"as SkyPilot iss\u0075e 3907 says; dstack iss\u0075e 1155 too": 0,
		"https://github.com/NVIDIA/nccl/issues/2409":                   0,
		"(X15) an issue with the fabric, 4 issues and 3 warnings":      0,
	} {
		if got := len(issueRefs(src)); got != want {
			t.Errorf("issueRefs(%q) = %d, want %d", src, got, want)
		}
	}
}

// Code and docs cite the rule tags of docs/rules.md, never this project's
// issue numbers: the Go, templ, Markdown and JavaScript files of the
// repository (generated ones included) and the OpenAPI document. Another
// project's tracker is named with its project (NVIDIA/nccl, then the
// issue's number) or linked.
func TestNoIssueNumbers(t *testing.T) {
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".templ", ".md", ".js":
		default:
			if filepath.Base(path) != "openapi.json" {
				return nil
			}
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, ref := range issueRefs(string(src)) {
			t.Errorf("%s cites %q: cite the rule tags it concerns (docs/rules.md) instead", path, ref)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 300 {
		t.Fatalf("only %d files read: the walk is not finding the sources", files)
	}
}
