package web

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/api/agentapi"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
	"gorm.io/gorm"
)

// OP1: the agent binary is served at its versioned URL with its checksum,
// over real HTTP, signed out; another version, another file or no binary
// at all answers 404.
func TestAgentBinary(t *testing.T) { modelstest.Each(t, testAgentBinary) }

func testAgentBinary(t *testing.T, db *gorm.DB) {
	bin := []byte("\x7fELF not really, but bytes all the same\x00\x01\x02")
	sum := sha256.Sum256(bin)
	digest := hex.EncodeToString(sum[:])
	path := filepath.Join(t.TempDir(), agentapi.BinaryFile)
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	version := digest[:12]
	served := func() (AgentBinary, error) { return AgentBinary{Path: path, SHA256: digest, Version: version}, nil }
	newServer := func(agent func() (AgentBinary, error)) *httptest.Server {
		srv := httptest.NewServer(New(Deps{Config: Config{BaseURL: "http://127.0.0.1"}, Store: models.NewStore(db, models.RealClock{}),
			Log: slog.New(slog.NewTextHandler(io.Discard, nil)), AgentBinary: agent}))
		t.Cleanup(srv.Close)
		return srv
	}
	srv := newServer(served)
	get := func(srv *httptest.Server, path string) (int, string, http.Header) {
		t.Helper()
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body), res.Header
	}

	code, body, h := get(srv, "/agent/"+version+"/"+agentapi.BinaryFile)
	if got := sha256.Sum256([]byte(body)); code != http.StatusOK || hex.EncodeToString(got[:]) != digest ||
		h.Get("Content-Type") != "application/octet-stream" || !strings.Contains(h.Get("Cache-Control"), "immutable") {
		t.Errorf("the binary: %d, %d bytes, headers %v", code, len(body), h)
	}
	if code, body, _ := get(srv, "/agent/"+version+"/"+agentapi.SumsFile); code != http.StatusOK || body != digest+"  "+agentapi.BinaryFile+"\n" {
		t.Errorf("SHA256SUMS: %d %q", code, body)
	}
	if !strings.HasSuffix(agentapi.BinaryURL("https://deck.example.com/", version), "/agent/"+version+"/clusterdeck-linux-amd64") {
		t.Errorf("BinaryURL %s", agentapi.BinaryURL("https://deck.example.com/", version))
	}
	// A range request resumes a download.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/agent/"+version+"/"+agentapi.BinaryFile, nil)
	req.Header.Set("Range", "bytes=4-")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusPartialContent {
		t.Errorf("range: %v %v", res, err)
	} else {
		part, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if string(part) != string(bin[4:]) {
			t.Errorf("range body %q", part)
		}
	}
	for _, p := range []string{
		"/agent/" + strings.Repeat("0", 12) + "/" + agentapi.BinaryFile, // another version
		"/agent/" + strings.Repeat("0", 12) + "/" + agentapi.SumsFile,
		"/agent/latest/" + agentapi.BinaryFile,
		"/agent/" + version + "/clusterdeck-linux-arm64", // another file
		"/agent/" + version + "/..%2f..%2fetc%2fpasswd",
		"/agent/" + version,
	} {
		if code, _, _ := get(srv, p); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, code)
		}
	}
	// A server with no binary to serve answers 404 for every version.
	none := newServer(func() (AgentBinary, error) { return AgentBinary{}, ErrNoAgentBinary })
	if code, _, _ := get(none, "/agent/"+version+"/"+agentapi.BinaryFile); code != http.StatusNotFound {
		t.Errorf("no binary: %d, want 404", code)
	}
	if code, _, _ := get(newServer(nil), "/agent/"+version+"/"+agentapi.SumsFile); code != http.StatusNotFound {
		t.Errorf("no binary configured: %d, want 404", code)
	}
}
