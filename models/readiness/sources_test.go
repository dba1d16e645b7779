package readiness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every sample in testdata/ says where it came from: the parsers are
// tested against these copies in every checkout, so their sources live
// beside them.
func TestFixturesHaveSources(t *testing.T) {
	checkSources(t, "testdata")
}

func checkSources(t *testing.T, dir string) {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() || e.Name() == "README.md" {
			continue
		}
		n++
		if !strings.Contains(string(readme), "`"+e.Name()+"`") {
			t.Errorf("%s/%s has no row in %s/README.md saying where it came from", dir, e.Name(), dir)
		}
	}
	if n == 0 {
		t.Errorf("no fixtures in %s", dir)
	}
}
