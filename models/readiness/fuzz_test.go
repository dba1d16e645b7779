package readiness

import (
	"path/filepath"
	"testing"
)

// seed adds every testdata file with one of the prefixes to the corpus.
func seed(f *testing.F, prefixes ...string) {
	f.Helper()
	for _, p := range prefixes {
		files, err := filepath.Glob(filepath.Join("testdata", p+"*"))
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			f.Add(fixture(f, filepath.Base(file)))
		}
	}
}

// The fuzzers assert that no input panics and that every report that
// comes back is self-consistent.

func FuzzSlurm(f *testing.F) {
	seed(f, "slurm_")
	f.Add("node-[1-3] idle\n")
	f.Add("gpu* up infinite 2 idle node-[1-2]\n")
	f.Add("n[01-10],idle+drain\n")
	f.Fuzz(func(t *testing.T, output string) {
		for _, expected := range [][]string{nil, {"node-1", "g-11", "lxfoo0001"}} {
			r, err := Slurm(output, expected)
			if err == nil {
				checkInvariants(t, r)
			}
		}
	})
}

func FuzzKubernetes(f *testing.F) {
	seed(f, "k8s_")
	f.Add(`{"kind":"Node","metadata":{"name":"node-0"},"status":{"allocatable":{"nvidia.com/gpu":"8"}}}`)
	f.Fuzz(func(t *testing.T, output string) {
		for _, gpus := range []int{0, 8} {
			r, err := Kubernetes(output, nil, gpus)
			if err == nil {
				checkInvariants(t, r)
			}
			r, err = Kubernetes(output, []string{"node-0", "node1", "p100"}, gpus)
			if err == nil {
				checkInvariants(t, r)
			}
		}
		_, _ = GPUsAllocatable(output)
	})
}

func FuzzRay(f *testing.F) {
	seed(f, "ray_")
	f.Fuzz(func(t *testing.T, output string) {
		for _, expected := range [][]string{nil, {"10.0.0.53", "node_1", "192.168.1.1"}} {
			r, err := Ray(output, expected)
			if err == nil {
				checkInvariants(t, r)
			}
		}
		if r, err := RayCount(output, 2); err == nil {
			checkInvariants(t, r)
		}
	})
}

func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{"node-[0-3]", "a[1-2,5],b3", "n[01-10]", "rack[1-2]-gpu[1-2]", "d[001-032],f[001-004,006-024]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		names, err := ExpandHostlist(expr)
		if err == nil && (len(names) == 0 || len(names) > MaxHostlist) {
			t.Fatalf("ExpandHostlist(%q) = %d names", expr, len(names))
		}
	})
}
