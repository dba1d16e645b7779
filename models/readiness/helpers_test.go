package readiness

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fixture reads a file from testdata.
func fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hosts expands a hostlist for test expectations.
func hosts(t testing.TB, expr string) []string {
	t.Helper()
	names, err := ExpandHostlist(expr)
	if err != nil {
		t.Fatalf("ExpandHostlist(%q): %v", expr, err)
	}
	return names
}

// node finds a node's result in a report.
func node(t testing.TB, r Report, name string) NodeResult {
	t.Helper()
	for _, n := range r.Nodes {
		if n.Node == name {
			return n
		}
	}
	t.Fatalf("node %q not in report %+v", name, r)
	return NodeResult{}
}

// failingNames lists the names of failing nodes.
func failingNames(r Report) []string {
	var out []string
	for _, n := range r.Failing() {
		out = append(out, n.Node)
	}
	return out
}

// checkInvariants asserts what must hold for every report.
func checkInvariants(t testing.TB, r Report) {
	t.Helper()
	if r.Ready && (len(r.Missing) > 0 || len(r.Failing()) > 0 || len(r.Pending) > 0 || len(r.Failures) > 0) {
		t.Fatalf("report is Ready with problems: %+v", r)
	}
	if r.Ready != strings.HasPrefix(r.Summary, "ready:") {
		t.Fatalf("Ready=%v but Summary %q", r.Ready, r.Summary)
	}
	for _, n := range r.Nodes {
		if n.OK == (n.Reason != "") {
			t.Fatalf("node %+v: OK and Reason disagree", n)
		}
	}
}

// wantErr asserts err wraps target.
func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

// Every real or constructed file in testdata must be exercised by a fixture
// table (slurmFixtures, k8sFixtures, rayFixtures).
func TestFixturesAllCovered(t *testing.T) {
	covered := map[string]bool{}
	for _, name := range slices.Concat(slurmFixtureNames(), k8sFixtureNames(), rayFixtureNames()) {
		covered[name] = true
	}
	for _, prefix := range []string{"slurm_", "k8s_", "ray_"} {
		files, err := filepath.Glob(filepath.Join("testdata", prefix+"*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if !covered[filepath.Base(f)] {
				t.Errorf("testdata/%s has no fixture test", filepath.Base(f))
			}
		}
	}
	for name := range covered {
		if _, err := os.Stat(filepath.Join("testdata", name)); err != nil {
			t.Errorf("fixture table names %s: %v", name, err)
		}
	}
}

// The real samples stay byte-identical to the outputs they were copied
// from: testdata/SHA256SUMS records each one's SHA-256 as copied (see
// testdata/README.md for the sources), and every real sample is listed.
func TestFixturesAsCopied(t *testing.T) {
	sums, err := os.ReadFile(filepath.Join("testdata", "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", line)
		}
		want[name] = sum
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*"))
	if err != nil {
		t.Fatal(err)
	}
	real := 0
	for _, f := range files {
		base := filepath.Base(f)
		if base == "README.md" || base == "SHA256SUMS" || strings.Contains(base, "constructed") {
			continue
		}
		real++
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got := sha256.Sum256(data)
		switch sum, ok := want[base]; {
		case !ok:
			t.Errorf("%s is a real sample not listed in SHA256SUMS", base)
		case sum != hex.EncodeToString(got[:]):
			t.Errorf("%s differs from the output it was copied from", base)
		}
	}
	if real != len(want) {
		t.Errorf("%d real samples, %d listed", real, len(want))
	}
}

func TestCheckDispatch(t *testing.T) {
	slurm := fixture(t, "slurm_sinfo_default_all_idle.txt")
	k8s := fixture(t, "k8s_nodelist_json_constructed_all_ready_gpu8.json")
	ray := fixture(t, "ray_status_v2_2023-03_healthy_gpu_placement_groups.txt")
	tests := []struct {
		software, output string
		expected         []string
		gpus             int
		want             string
	}{
		{"slurm", slurmCheck(slurm, "g-11 a gpus=0", "g-12 b gpus=0"), []string{"g-11", "g-12"}, 0, "slurm"},
		{"Slurm", slurmCheck(slurm, "g-11 a gpus=0", "g-12 b gpus=0"), []string{"g-11", "g-12"}, 0, "slurm"},
		{"kubernetes", k8s, []string{"node-0", "node-1", "node-2"}, 8, "kubernetes"},
		{"k8s", k8s, []string{"node-0", "node-1", "node-2"}, 8, "kubernetes"},
		{" ray ", ray, []string{"node_0bf2868539ecac836c61a352462452b953710b904e9f6b0b9d4b25c1", "node_9141273b0ca7727b27c33f7d427040275356cfc7a2ea43685c400099"}, 4, "ray"},
	}
	for _, tt := range tests {
		r, err := Check(tt.software, tt.output, tt.expected, tt.gpus)
		if err != nil {
			t.Fatalf("Check(%q): %v", tt.software, err)
		}
		if r.Software != tt.want || !r.Ready {
			t.Errorf("Check(%q) = %s ready=%v, want %s ready", tt.software, r.Software, r.Ready, tt.want)
		}
		checkInvariants(t, r)
	}
	for _, sw := range []string{"none", "", "pbs"} {
		if _, err := Check(sw, slurm, nil, 0); !errors.Is(err, ErrSoftware) {
			t.Errorf("Check(%q) error = %v, want ErrSoftware", sw, err)
		}
	}
}

func TestExpectedValidation(t *testing.T) {
	slurm := fixture(t, "slurm_sinfo_default_all_idle.txt")
	_, err := Slurm(slurm, []string{"g-11", " "})
	wantErr(t, err, ErrExpected)
	_, err = Kubernetes(fixture(t, "k8s_kubectl_get_nodes_all_ready.txt"), []string{""}, 0)
	wantErr(t, err, ErrExpected)
	_, err = Ray(fixture(t, "ray_status_v2_2023-03_healthy_gpu_placement_groups.txt"), []string{""})
	wantErr(t, err, ErrExpected)

	// Duplicates are judged once.
	r, err := Slurm(slurm, []string{"g-11", "g-11", "g-12"})
	if err != nil || !r.Ready || len(r.Nodes) != 2 {
		t.Fatalf("duplicates: %+v, %v", r, err)
	}
}
