// Command testreport runs `go test -json` with the given arguments, prints
// what plain `go test` would (each package's closing line, failing tests'
// output, build errors), and ends with one loud line counting the tests that
// skipped and why, so a run without PostgreSQL or Chromium never looks
// complete. It exits with go test's status. `make test` uses it:
//
//	go run ./internal/testreport -race -count=1 ./...
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"time"
)

func main() {
	began := time.Now()
	cmd := exec.Command("go", append([]string{"test", "-json"}, os.Args[1:]...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
	r := newReport(os.Stdout)
	if err := r.read(out); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
	}
	err = cmd.Wait()
	fmt.Fprint(os.Stdout, r.slowest(slowestShown))
	fmt.Fprintf(os.Stdout, "go test ran for %s\n", time.Since(began).Round(time.Second))
	fmt.Fprintln(os.Stdout, r.summary())
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(2)
	}
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Output     string
	Elapsed    float64 // seconds, on pass, fail and skip
}

type report struct {
	w       io.Writer
	outputs map[string][]string // package + test → output lines so far
	ran     int                 // tests that passed, failed or skipped
	skips   map[string]int      // reason → tests
	timed   []timing            // top-level tests that ended, with how long they took
}

// timing is how long one top-level test ran, for the slowest-tests list.
type timing struct {
	name    string // package + top-level test
	seconds float64
	sub     bool // a direct subtest's time, summed into its test's
}

func newReport(w io.Writer) *report {
	return &report{w: w, outputs: map[string][]string{}, skips: map[string]int{}}
}

func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(r.w, sc.Text()) // not an event: show it as it came
			continue
		}
		r.handle(e)
	}
	return sc.Err()
}

func (r *report) handle(e event) {
	key := e.Package + " " + e.Test
	if (e.Action == "pass" || e.Action == "fail") && e.Test != "" && strings.Count(e.Test, "/") <= 1 {
		// A top-level test that runs its cases as parallel subtests (one
		// per database) ends at once: its time is its subtests'.
		top, _, sub := strings.Cut(e.Test, "/")
		r.timed = append(r.timed, timing{name: e.Package + " " + top, seconds: e.Elapsed, sub: sub})
	}
	switch {
	case e.Action == "build-output":
		fmt.Fprint(r.w, e.Output)
	case e.Action == "output" && e.Test == "":
		if !progress(e.Output) && e.Output != "PASS\n" {
			fmt.Fprint(r.w, e.Output) // "ok  pkg 1.2s", "FAIL pkg", panics outside tests
		}
	case e.Action == "output":
		r.outputs[key] = append(r.outputs[key], e.Output)
	case e.Action == "pass" && e.Test != "":
		r.ran++
		delete(r.outputs, key)
	case e.Action == "fail" && e.Test != "":
		r.ran++
		for _, line := range r.outputs[key] {
			if !progress(line) {
				fmt.Fprint(r.w, line)
			}
		}
		delete(r.outputs, key)
	case e.Action == "skip" && e.Test != "":
		r.ran++
		r.skips[skipReason(r.outputs[key])]++
		delete(r.outputs, key)
	}
}

// progress reports go test -v's progress lines, which plain go test hides.
func progress(line string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

var logPrefix = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// skipReason is the message the test skipped with (its last logged line).
func skipReason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "--- SKIP") || progress(line) {
			continue
		}
		return logPrefix.ReplaceAllString(line, "")
	}
	return "no reason given"
}

// slowestShown is how many of the slowest tests the report names: where
// the suite's time goes, in every run's output.
const slowestShown = 12

// slowest lists the n longest top-level tests (wall time, parallel tests
// overlapping), longest first.
func (r *report) slowest(n int) string {
	if len(r.timed) == 0 {
		return ""
	}
	own, subs := map[string]float64{}, map[string]float64{}
	var names []string
	for _, x := range r.timed {
		if _, seen := own[x.name]; !seen {
			if _, seen := subs[x.name]; !seen {
				names = append(names, x.name)
			}
		}
		if x.sub {
			subs[x.name] += x.seconds
		} else {
			own[x.name] = x.seconds
		}
	}
	t := make([]timing, len(names))
	for i, name := range names {
		t[i] = timing{name: name, seconds: max(own[name], subs[name])}
	}
	sort.SliceStable(t, func(i, j int) bool { return t[i].seconds > t[j].seconds })
	var b strings.Builder
	b.WriteString("slowest tests:\n")
	for _, x := range t[:min(n, len(t))] {
		fmt.Fprintf(&b, "  %7.1fs  %s\n", x.seconds, x.name)
	}
	return b.String()
}

// summary is the one closing line.
func (r *report) summary() string {
	total := 0
	for _, n := range r.skips {
		total += n
	}
	if total == 0 {
		return fmt.Sprintf("testreport: all %d tests ran; none skipped.", r.ran)
	}
	reasons := make([]string, 0, len(r.skips))
	for reason := range r.skips {
		reasons = append(reasons, reason)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if r.skips[reasons[i]] != r.skips[reasons[j]] {
			return r.skips[reasons[i]] > r.skips[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	parts := make([]string, len(reasons))
	for i, reason := range reasons {
		parts[i] = fmt.Sprintf("%d × %q", r.skips[reason], reason)
	}
	return fmt.Sprintf("!!! SKIPPED %d of %d tests — this run proves less than it looks: %s", total, r.ran, strings.Join(parts, "; "))
}
