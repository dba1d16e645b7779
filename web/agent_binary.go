package web

import (
	"errors"
	"net/http"
	"os"
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
		f, err := os.Open(bin.Path)
		if err != nil {
			return err
		}
		defer f.Close()
		c.Response().Header().Set(echo.HeaderContentType, "application/octet-stream")
		c.Response().Header().Set("Content-Disposition", `attachment; filename="`+agentapi.BinaryFile+`"`)
		http.ServeContent(c.Response(), c.Request(), agentapi.BinaryFile, time.Time{}, f)
		return nil
	}
	return notFound
}
