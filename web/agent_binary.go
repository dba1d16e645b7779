package web

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/clusterdeck/clusterdeck/api/agentapi"
	"github.com/labstack/echo/v4"
)

// AgentBinary is the clusterdeck binary this server hands to the machines
// it places (OP1), as main found it: the file, its SHA-256 (64 hex digits)
// and its version (the digest's first 12).
type AgentBinary struct {
	Path, SHA256, Version string
}

// ErrNoAgentBinary: the server has no linux/amd64 binary to hand out.
var ErrNoAgentBinary = errors.New("web: no agent binary")

// agentBinary is GET /agent/:version/:file — the binary
// (clusterdeck-linux-amd64) and its checksum (SHA256SUMS) at a versioned
// URL, for the machines' start-up scripts. No credential: the binary is the
// public product, and the script checks it against the checksum its
// placement carried. A version other than the served one, or no binary to
// serve, answers 404.
func (h *handler) agentBinary(c echo.Context) error {
	notFound := &APIError{Status: http.StatusNotFound, Code: "not_found", Message: "No agent binary of this version here."}
	if h.AgentBinary == nil {
		return notFound
	}
	bin, err := h.AgentBinary()
	if errors.Is(err, ErrNoAgentBinary) {
		return notFound
	}
	if err != nil {
		return err
	}
	if c.Param("version") != bin.Version {
		return notFound
	}
	// Immutable: a version names one binary forever.
	c.Response().Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	switch c.Param("file") {
	case agentapi.SumsFile:
		return c.String(http.StatusOK, bin.SHA256+"  "+agentapi.BinaryFile+"\n")
	case agentapi.BinaryFile:
		f, size, err := h.agentFiles.open(bin.Path)
		if err != nil {
			return err
		}
		// Served as stored: never gzipped (skipGzip), so a Range asks
		// for the binary's own bytes; the ETag (its digest) lets If-Range
		// and If-None-Match work.
		c.Response().Header().Set(echo.HeaderContentType, "application/octet-stream")
		c.Response().Header().Set("Content-Disposition", `attachment; filename="`+agentapi.BinaryFile+`"`)
		c.Response().Header().Set("ETag", `"`+bin.SHA256+`"`)
		holdOpen(c, downloadWriteWindow) // tens of MB over a slow link outlive the server's write timeout
		http.ServeContent(c.Response(), c.Request(), agentapi.BinaryFile, time.Time{}, io.NewSectionReader(f, 0, size))
		return nil
	}
	return notFound
}

// openFiles keeps each served binary open from its first download on (OP1): a download is one read of that handle (ReadAt, safe from
// many requests at once), never an open or a compression, and it answers
// the bytes the version was computed from even if the file on disk is
// replaced afterwards (a version names one binary forever).
type openFiles struct {
	mu    sync.Mutex
	files map[string]openFile
}

type openFile struct {
	f    *os.File
	size int64
}

// open returns path's handle and size, opening it the first time.
func (o *openFiles) open(path string) (io.ReaderAt, int64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if of, ok := o.files[path]; ok {
		return of.f, of.size, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if o.files == nil {
		o.files = map[string]openFile{}
	}
	o.files[path] = openFile{f: f, size: st.Size()}
	return f, st.Size(), nil
}
