package agentbin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// OP1: the served binary is AGENT_BINARY_DIR's file, or the running
// executable itself; its version is the start of its digest.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	data := []byte("a clusterdeck binary")
	if err := os.WriteFile(filepath.Join(dir, FileName), data, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir)
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	if err != nil || b.SHA256 != want || b.Version != want[:12] || b.Size != int64(len(data)) {
		t.Fatalf("Open(dir) = %+v, %v", b, err)
	}
	if got := b.URL("https://deck.example.com/"); got != "https://deck.example.com/agent/"+want[:12]+"/clusterdeck-linux-amd64" {
		t.Errorf("URL %s", got)
	}
	if b.Sums() != want+"  clusterdeck-linux-amd64\n" {
		t.Errorf("Sums %q", b.Sums())
	}
	if _, err := Open(t.TempDir()); err == nil {
		t.Error("a directory without the binary opened")
	}

	self, err := Lazy("")()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		if !errors.Is(err, ErrNone) {
			t.Errorf("on %s/%s: %v, want ErrNone", runtime.GOOS, runtime.GOARCH, err)
		}
		return
	}
	exe, _ := os.Executable()
	data, _ = os.ReadFile(exe)
	sum = sha256.Sum256(data)
	if err != nil || self.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("the running executable: %+v, %v", self, err)
	}
}
