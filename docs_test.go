package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// docPages are the README and every page under docs/.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 5 {
		t.Fatalf("docs/ holds %d pages; the glob is not finding them", len(pages))
	}
	return append([]string{"README.md"}, pages...)
}

// The README is the front page: what Clusterdeck is, the two commands, a
// tour and links. The manual lives in docs/.
func TestReadmeIsShort(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > 200 {
		t.Errorf("README.md has %d lines; keep it at 200 at most and move the rest to docs/", n)
	}
	for _, want := range []string{"make run", "make test", "docs/architecture.md"} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("README.md does not mention %s", want)
		}
	}
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
)

// anchor is the id GitHub gives a heading: lower case, punctuation but
// hyphens and underscores dropped, spaces made hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// withoutCode drops fenced blocks, so a "# comment" in a shell block is not
// taken for a heading and a "](x)" in code not for a link.
func withoutCode(md string) string {
	var out []string
	in := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if !in {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func anchorsOf(md string) map[string]bool {
	ids := map[string]bool{}
	for _, m := range mdHeading.FindAllStringSubmatch(withoutCode(md), -1) {
		ids[anchor(m[1])] = true
	}
	return ids
}

func TestAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"Your own machines (`PROVIDERS=ssh`)":                     "your-own-machines-providersssh",
		"Balance enforcement, stop and resume":                    "balance-enforcement-stop-and-resume",
		"What the GPUs are doing, stalls and idle clusters (X15)": "what-the-gpus-are-doing-stalls-and-idle-clusters-x15",
	} {
		if got := anchor(heading); got != want {
			t.Errorf("anchor(%q) = %q, want %q", heading, got, want)
		}
	}
}

// Every relative link of the README and of docs/ reaches a file of the
// repository, and its #fragment a heading of that page.
func TestDocsLinksResolve(t *testing.T) {
	checked := 0
	for _, page := range docPages(t) {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(withoutCode(string(src)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			file, frag, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			body, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("%s links to %s, which does not exist", page, target)
				continue
			}
			if frag != "" && !anchorsOf(string(body))[frag] {
				t.Errorf("%s links to %s: %s has no heading #%s", page, target, path, frag)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d relative links checked: the scan is not finding them", checked)
	}
}

// shellCommand is one command of a ```sh block: its page, its line and its
// words (quotes removed, a continued line joined, the comment dropped).
type shellCommand struct {
	page  string
	line  int
	words []string
}

func (c shellCommand) String() string {
	return fmt.Sprintf("%s:%d: %s", c.page, c.line, strings.Join(c.words, " "))
}

// shellWords splits a line as a shell would for the documented commands:
// single and double quotes, backslash escapes, and a # starting a word
// begins a comment.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '\\' && i+1 < len(rs):
			i++
			cur.WriteRune(rs[i])
			inWord = true
		case r == '#' && !inWord:
			return words
		case unicode.IsSpace(r):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// shellCommands are the commands of every ```sh block of the README and
// docs/. A block marked sh is runnable: every command in it is checked.
// Examples that are not (output, configuration) use another fence.
func shellCommands(t *testing.T) []shellCommand {
	t.Helper()
	var cmds []shellCommand
	for _, page := range docPages(t) {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		in, pending, start := false, "", 0
		for i, line := range strings.Split(string(src), "\n") {
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "```") {
				in = trimmed == "```sh"
				continue
			}
			if !in || trimmed == "" {
				continue
			}
			if pending == "" {
				start = i + 1
			}
			// A line continued with a backslash (before any comment).
			if strings.HasSuffix(trimmed, "\\") {
				pending += strings.TrimSuffix(trimmed, "\\") + " "
				continue
			}
			if words := shellWords(pending + trimmed); len(words) > 0 {
				cmds = append(cmds, shellCommand{page: page, line: start, words: words})
			}
			pending = ""
		}
	}
	return cmds
}

func TestShellWords(t *testing.T) {
	got := shellWords(`curl -s -X POST -H "Authorization: Bearer $KEY" -d '{"a":1}' http://x/v1 # a comment`)
	want := []string{"curl", "-s", "-X", "POST", "-H", "Authorization: Bearer $KEY", "-d", `{"a":1}`, "http://x/v1"}
	if !slices.Equal(got, want) {
		t.Errorf("shellWords = %q, want %q", got, want)
	}
}

var assignment = regexp.MustCompile(`^([A-Z][A-Z0-9_]*)=`)

// knownEnv are the variables the binary, the Makefile and the test runner
// read: quoted in a Go file of the repository or a Makefile variable.
func knownEnv(t *testing.T) func(string) bool {
	t.Helper()
	var src strings.Builder
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			src.Write(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	goSrc := src.String()
	// A name composed in the code: a provider's prefix and a quoted suffix
	// (p+"_AGENT_URL", strings.ToUpper(provider) + "_MARKUP_PERCENT").
	suffixes := regexp.MustCompile(`\+ ?"(_[A-Z0-9_]+)"`).FindAllStringSubmatch(goSrc, -1)
	return func(name string) bool {
		if strings.Contains(goSrc, `"`+name+`"`) || regexp.MustCompile(`(?m)^`+name+`\s*[?:]?=`).Match(makefile) {
			return true
		}
		for _, s := range suffixes {
			prefix, ok := strings.CutSuffix(name, s[1])
			if ok && prefix != "" && (strings.Contains(goSrc, `"`+prefix+`"`) || strings.Contains(goSrc, `"`+strings.ToLower(prefix)+`"`)) {
				return true
			}
		}
		return false
	}
}

// Every command of a ```sh block of the README and docs/ still works as
// written: a clusterdeck command and each flag it names are ones the
// binary has (its --help, run in process, lists them), a make target is in
// the Makefile, a variable set for a command is one the binary or the
// Makefile reads, and a go test names a package and tests that exist. A
// curl command's route is checked against the router by web's
// TestDocsEndpointsExist. Anything else in an sh block fails: such an
// example goes in a block that is not marked sh.
func TestDocsShellCommands(t *testing.T) {
	makefile, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	known := knownEnv(t)
	cmds := shellCommands(t)
	kinds := map[string]int{}
	for _, c := range cmds {
		words := c.words
		exported := words[0] == "export"
		if exported {
			words = words[1:]
		}
		var vars []string
		for len(words) > 0 && assignment.MatchString(words[0]) {
			vars = append(vars, assignment.FindStringSubmatch(words[0])[1])
			words = words[1:]
		}
		if len(words) == 0 && !exported {
			continue // a shell variable for the lines below (KEY=cdk_…)
		}
		for _, v := range vars {
			if !known(v) {
				t.Errorf("%s: %s is read by neither the binary nor the Makefile", c, v)
			}
		}
		if len(words) == 0 {
			kinds["export"]++
			continue
		}
		switch prog := words[0]; {
		case prog == "make":
			kinds["make"]++
			for _, target := range words[1:] {
				if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:`).Match(makefile) {
					t.Errorf("%s: the Makefile has no target %q", c, target)
				}
			}
		case prog == "./bin/clusterdeck" || prog == "clusterdeck":
			kinds["clusterdeck"]++
			checkCommand(t, c, words[1:])
		case prog == "curl":
			kinds["curl"]++ // web's TestDocsEndpointsExist
		case prog == "go":
			kinds["go"]++
			checkGoCommand(t, c, words[1:])
		default:
			t.Errorf("%s: %s is not a command this test can check; put the example in a block not marked sh", c, prog)
		}
	}
	for _, kind := range []string{"make", "clusterdeck", "curl"} {
		if kinds[kind] == 0 {
			t.Errorf("no %s command found in the sh blocks: the scan is broken (found %v)", kind, kinds)
		}
	}
}

// checkCommand runs args' command words with --help (in process: no server,
// no database) and checks that it exists and lists each flag args names.
func checkCommand(t *testing.T, c shellCommand, args []string) {
	t.Helper()
	path := commandWords(args)
	var stdout, stderr strings.Builder
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // were the command to serve, it would stop at once
	env := map[string]string{"DATA_DIR": t.TempDir(), "ADDR": "127.0.0.1:0"}
	err := run(ctx, append(slices.Clone(path), "--help"), func(k string) string { return env[k] }, &stdout, &stderr)
	help := stdout.String() + stderr.String()
	if err != nil || !strings.Contains(help, "clusterdeck "+strings.Join(path, " ")) {
		t.Errorf("%s: clusterdeck %s --help fails (%v) or does not show its usage:\n%s", c, strings.Join(path, " "), err, help)
		return
	}
	for _, f := range flagsOf(args) {
		if !regexp.MustCompile(`(?m)^\s+-` + regexp.QuoteMeta(f) + `\b`).MatchString(help) {
			t.Errorf("%s: clusterdeck %s has no flag --%s", c, strings.Join(path, " "), f)
		}
	}
}

var commandWord = regexp.MustCompile(`^[a-z][a-z-]*$`)

// commandWords are the leading words of args naming a command ("gpu
// clusters launch"); the first flag or argument ends them.
func commandWords(args []string) []string {
	var path []string
	for _, a := range args {
		if !commandWord.MatchString(a) {
			break
		}
		path = append(path, a)
	}
	return path
}

// flagsOf are the flag names args use, whether written --flag, --flag=v or
// [--flag] (an optional one).
func flagsOf(args []string) []string {
	var flags []string
	for _, a := range args {
		a = strings.Trim(a, "[]")
		if strings.HasPrefix(a, "-") {
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			flags = append(flags, name)
		}
	}
	return flags
}

// checkGoCommand checks go test and go run lines: the package directory
// exists, and each test -run names is a function of that package's tests.
func checkGoCommand(t *testing.T, c shellCommand, args []string) {
	t.Helper()
	if len(args) == 0 || (args[0] != "test" && args[0] != "run") {
		t.Errorf("%s: only go test and go run are checked", c)
		return
	}
	var pkgs, names []string
	for i := 1; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-run" && i+1 < len(args):
			i++
			for _, n := range strings.Split(strings.Trim(args[i], "^$"), "|") {
				if n = strings.Trim(n, "^$"); n != "" {
					names = append(names, n)
				}
			}
		case strings.HasPrefix(a, "./"):
			pkgs = append(pkgs, strings.TrimSuffix(strings.TrimSuffix(a, "..."), "/"))
		}
	}
	if len(pkgs) == 0 {
		t.Errorf("%s: names no package", c)
	}
	for _, p := range pkgs {
		if st, err := os.Stat(p); err != nil || !st.IsDir() {
			t.Errorf("%s: %s is not a package directory", c, p)
		}
	}
	for _, n := range names {
		found := false
		for _, p := range pkgs {
			files, _ := filepath.Glob(filepath.Join(p, "*_test.go"))
			for _, f := range files {
				b, _ := os.ReadFile(f)
				found = found || regexp.MustCompile(`(?m)^func `+regexp.QuoteMeta(n)+`\(`).Match(b)
			}
		}
		if !found {
			t.Errorf("%s: no test %s in %v", c, n, pkgs)
		}
	}
}

var configRow = regexp.MustCompile("(?m)^\\| (`[A-Z][A-Z0-9_]*`(?:, `[A-Z][A-Z0-9_]*`)*) \\|")

// Every variable of docs/operating.md's configuration table is read by
// config.go (or, for the test runner's, by the Go code), so a setting
// renamed or removed in the code fails here until the page says so.
func TestDocsConfigVarsExist(t *testing.T) {
	page, err := os.ReadFile("docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile("config.go")
	if err != nil {
		t.Fatal(err)
	}
	known := knownEnv(t)
	n := 0
	for _, m := range configRow.FindAllStringSubmatch(string(page), -1) {
		for _, v := range regexp.MustCompile("`([A-Z][A-Z0-9_]*)`").FindAllStringSubmatch(m[1], -1) {
			n++
			if !strings.Contains(string(cfg), `"`+v[1]+`"`) && !known(v[1]) {
				t.Errorf("docs/operating.md documents %s, which no code reads", v[1])
			}
		}
	}
	if n < 40 {
		t.Fatalf("only %d variables found in docs/operating.md's table: the scan is broken", n)
	}
}
