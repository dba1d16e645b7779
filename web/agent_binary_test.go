package web

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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
	"github.com/clusterdeck/clusterdeck/static"
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

// OP1: the public immutable downloads cost one read. The
// binary is served as stored, never gzipped, even to a client that accepts
// gzip, so a Range answers the binary's own bytes; it is read from the
// handle opened at the first download (replacing the file on disk changes
// nothing a version's URL answers); and neither /agent/ nor /static/ sets a
// cookie (no session, no CSRF mirror) on an answer caches keep for a year.
func TestPublicDownloadsServedAsStoredWithoutCookies(t *testing.T) {
	modelstest.Each(t, testPublicDownloads)
}

func testPublicDownloads(t *testing.T, db *gorm.DB) {
	bin := []byte(strings.Repeat("\x7fELF compressible agent bytes ", 4096))
	sum := sha256.Sum256(bin)
	digest := hex.EncodeToString(sum[:])
	version := digest[:12]
	path := filepath.Join(t.TempDir(), agentapi.BinaryFile)
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	e, h := newServer(Deps{Config: Config{BaseURL: "http://127.0.0.1"}, Store: models.NewStore(db, models.RealClock{}),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Static: static.FS,
		AgentBinary: func() (AgentBinary, error) {
			return AgentBinary{Path: path, SHA256: digest, Version: version}, nil
		}})
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	binURL := srv.URL + "/agent/" + version + "/" + agentapi.BinaryFile
	do := func(url string, header ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := http.DefaultClient.Do(req) // an explicit Accept-Encoding: the body arrives as sent
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res, body
	}

	res, body := do(binURL, "Accept-Encoding", "gzip")
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Encoding") != "" || string(body) != string(bin) ||
		res.ContentLength != int64(len(bin)) || res.Header.Get("ETag") != `"`+digest+`"` {
		t.Errorf("binary with Accept-Encoding gzip: %d, Content-Encoding %q, %d bytes (want %d), ETag %q",
			res.StatusCode, res.Header.Get("Content-Encoding"), len(body), len(bin), res.Header.Get("ETag"))
	}
	res, body = do(binURL, "Accept-Encoding", "gzip", "Range", "bytes=100-199")
	if res.StatusCode != http.StatusPartialContent || res.Header.Get("Content-Encoding") != "" || string(body) != string(bin[100:200]) ||
		res.Header.Get("Content-Range") != fmt.Sprintf("bytes 100-199/%d", len(bin)) {
		t.Errorf("range with Accept-Encoding gzip: %d, Content-Encoding %q, Content-Range %q, body %q",
			res.StatusCode, res.Header.Get("Content-Encoding"), res.Header.Get("Content-Range"), body)
	}
	res, _ = do(binURL, "If-None-Match", `"`+digest+`"`)
	if res.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match with the digest: %d, want 304", res.StatusCode)
	}

	// The file replaced on disk: the version's URL still answers the bytes
	// it names, from the handle opened once.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("another binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	if res, body := do(binURL, "Range", "bytes=0-9"); res.StatusCode != http.StatusPartialContent || string(body) != string(bin[:10]) {
		t.Errorf("after the file was replaced: %d %q, want the original bytes", res.StatusCode, body)
	}
	if n := len(h.agentFiles.files); n != 1 {
		t.Errorf("%d files held open, want 1", n)
	}

	// No cookie on any public download answer, found or not.
	asset := h.assetURLs["css/app.css"]
	if asset == "" {
		t.Fatal("no static asset to fetch")
	}
	for _, u := range []string{binURL, srv.URL + "/agent/" + version + "/" + agentapi.SumsFile,
		srv.URL + "/agent/" + strings.Repeat("0", 12) + "/" + agentapi.BinaryFile,
		srv.URL + asset, srv.URL + "/static/no-such-file.css"} {
		for _, enc := range []string{"gzip", "identity"} {
			res, _ := do(u, "Accept-Encoding", enc)
			if c := res.Header.Values("Set-Cookie"); len(c) > 0 {
				t.Errorf("GET %s (%s): %d sets cookies %q", strings.TrimPrefix(u, srv.URL), enc, res.StatusCode, c)
			}
		}
	}
}

// BenchmarkAgentBinaryDownload: a download of a 16 MB binary costs a read
// of it, no compression: bytes allocated per download stay far below its
// size (gzip's buffers and output were megabytes each time).
func BenchmarkAgentBinaryDownload(b *testing.B) {
	db := openSQLite(b)
	bin := make([]byte, 16<<20)
	for i := range bin {
		bin[i] = byte(i % 251)
	}
	sum := sha256.Sum256(bin)
	digest := hex.EncodeToString(sum[:])
	path := filepath.Join(b.TempDir(), agentapi.BinaryFile)
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		b.Fatal(err)
	}
	e := New(Deps{Config: Config{BaseURL: "http://127.0.0.1"}, Store: models.NewStore(db, models.RealClock{}),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		AgentBinary: func() (AgentBinary, error) {
			return AgentBinary{Path: path, SHA256: digest, Version: digest[:12]}, nil
		}})
	b.ReportAllocs()
	b.SetBytes(int64(len(bin)))
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "/agent/"+digest[:12]+"/"+agentapi.BinaryFile, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		w := &countingWriter{header: http.Header{}}
		e.ServeHTTP(w, req)
		if w.status != http.StatusOK || w.n != int64(len(bin)) {
			b.Fatalf("%d, %d bytes", w.status, w.n)
		}
	}
}

// countingWriter is a ResponseWriter that only counts the body's bytes.
type countingWriter struct {
	header http.Header
	status int
	n      int64
}

func (w *countingWriter) Header() http.Header { return w.header }
func (w *countingWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
	}
}
func (w *countingWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.n += int64(len(p))
	return len(p), nil
}
