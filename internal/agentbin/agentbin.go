// Package agentbin is the clusterdeck binary this server hands to the
// machines it places (OP1): their start-up script downloads it from
// BASE_URL/agent/<version>/clusterdeck-linux-amd64 and checks it against
// BASE_URL/agent/<version>/SHA256SUMS before running `clusterdeck agent`.
// The binary is the running executable (when the server itself runs on
// linux/amd64) or the clusterdeck-linux-amd64 file of AGENT_BINARY_DIR. Its
// version is the start of its SHA-256: a URL names one binary forever, so a
// machine never runs a binary other than the one its script checks.
package agentbin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/clusterdeck/clusterdeck/api/agentapi"
)

// FileName is the binary's name in its URL and in AGENT_BINARY_DIR.
const FileName = agentapi.BinaryFile

// ErrNone: this server has no linux/amd64 binary to serve (it runs on
// another platform and AGENT_BINARY_DIR is unset).
var ErrNone = errors.New("agentbin: no linux/amd64 clusterdeck binary to serve (set AGENT_BINARY_DIR)")

// Binary is the served agent binary.
type Binary struct {
	Path    string // the file served
	SHA256  string // its digest, 64 lowercase hex digits
	Version string // the first 12 digits of SHA256: the URL's version
	Size    int64
}

// Open finds the binary: dir/clusterdeck-linux-amd64 when dir is set, else
// the running executable when it is linux/amd64 (else ErrNone), and hashes it.
func Open(dir string) (*Binary, error) {
	path := ""
	switch {
	case dir != "":
		path = filepath.Join(dir, FileName)
	case runtime.GOOS == "linux" && runtime.GOARCH == "amd64":
		// The running executable itself, even once an upgrade replaced
		// the file it was started from.
		path = "/proc/self/exe"
	default:
		return nil, ErrNone
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("agentbin: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, fmt.Errorf("agentbin: %s: %w", path, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	return &Binary{Path: path, SHA256: sum, Version: sum[:12], Size: n}, nil
}

// Lazy opens the binary once, on first use (hashing it takes a moment).
func Lazy(dir string) func() (*Binary, error) {
	return sync.OnceValues(func() (*Binary, error) { return Open(dir) })
}

// URL is where machines download the binary from a server at base.
func (b *Binary) URL(base string) string { return agentapi.BinaryURL(base, b.Version) }

// Sums is the SHA256SUMS file: the digest and the file name, as
// `sha256sum -c` reads it.
func (b *Binary) Sums() string { return b.SHA256 + "  " + FileName + "\n" }
