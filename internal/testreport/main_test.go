package main

import (
	"strings"
	"testing"
)

// A stream with a pass, a failure and two skips prints what plain go test
// prints and one line counting the skips by reason.
func TestReport(t *testing.T) {
	stream := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestOK"}`,
		`{"Action":"output","Package":"p","Test":"TestOK","Output":"=== RUN   TestOK\n"}`,
		`{"Action":"output","Package":"p","Test":"TestOK","Output":"    a_test.go:3: quiet on success\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestOK"}`,
		`{"Action":"output","Package":"p","Test":"TestBad","Output":"=== RUN   TestBad\n"}`,
		`{"Action":"output","Package":"p","Test":"TestBad","Output":"    a_test.go:9: boom\n"}`,
		`{"Action":"output","Package":"p","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestBad"}`,
		`{"Action":"output","Package":"p","Test":"TestDB/postgres","Output":"    db.go:78: SKIPPING PostgreSQL: set TEST_DATABASE_URL\n"}`,
		`{"Action":"output","Package":"p","Test":"TestDB/postgres","Output":"--- SKIP: TestDB/postgres (0.00s)\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestDB/postgres"}`,
		`{"Action":"output","Package":"p","Test":"TestDB2/postgres","Output":"    db.go:78: SKIPPING PostgreSQL: set TEST_DATABASE_URL\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestDB2/postgres"}`,
		`{"Action":"output","Package":"p","Output":"PASS\n"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t0.01s\n"}`,
		`{"Action":"fail","Package":"p"}`,
	}, "\n")
	var out strings.Builder
	r := newReport(&out)
	if err := r.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	want := "    a_test.go:9: boom\n--- FAIL: TestBad (0.00s)\nFAIL\tp\t0.01s\n"
	if out.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out.String(), want)
	}
	wantSummary := `!!! SKIPPED 2 of 4 tests — this run proves less than it looks: 2 × "SKIPPING PostgreSQL: set TEST_DATABASE_URL"`
	if got := r.summary(); got != wantSummary {
		t.Errorf("summary:\n%s\nwant:\n%s", got, wantSummary)
	}
}

func TestReportNoSkips(t *testing.T) {
	r := newReport(&strings.Builder{})
	r.handle(event{Action: "pass", Package: "p", Test: "TestOK"})
	if got := r.summary(); got != "testreport: all 1 tests ran; none skipped." {
		t.Errorf("summary = %q", got)
	}
}

// The closing report names the slowest top-level tests, longest first; a
// test's time is its own or, when larger, its direct subtests' together.
func TestReportSlowest(t *testing.T) {
	r := newReport(&strings.Builder{})
	r.handle(event{Action: "pass", Package: "p", Test: "TestQuick", Elapsed: 0.2})
	r.handle(event{Action: "fail", Package: "q", Test: "TestLong", Elapsed: 95.5})
	r.handle(event{Action: "pass", Package: "q", Test: "TestLong/sub", Elapsed: 90})
	r.handle(event{Action: "pass", Package: "p", Test: "TestMid", Elapsed: 12})
	// Parallel subtests (one per database): the test is their sum.
	r.handle(event{Action: "pass", Package: "p", Test: "TestEach/sqlite", Elapsed: 30})
	r.handle(event{Action: "pass", Package: "p", Test: "TestEach/postgres", Elapsed: 40})
	r.handle(event{Action: "pass", Package: "p", Test: "TestEach/postgres/deeper", Elapsed: 39})
	r.handle(event{Action: "pass", Package: "p", Test: "TestEach", Elapsed: 0})
	want := "slowest tests:\n     95.5s  q TestLong\n     70.0s  p TestEach\n"
	if got := r.slowest(2); got != want {
		t.Errorf("slowest:\n%s\nwant:\n%s", got, want)
	}
	if got := newReport(&strings.Builder{}).slowest(3); got != "" {
		t.Errorf("no tests: %q", got)
	}
}
