package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// Static assets are read, hashed and gzipped once at start-up, then served
// from memory (O3). Pages link them as /static/NAME?v=HASH (see
// views.Meta.Asset): a versioned URL never changes content, so it is cached
// for a year as immutable; an unversioned or stale URL revalidates by ETag.
// Gzip is served as stored when the client accepts it, never recompressed.

const (
	immutableCache   = "public, max-age=31536000, immutable"
	revalidateCache  = "public, no-cache"
	minGzipSaving    = 0.9 // keep the gzipped copy when it is under 90 % of the original
	assetHashHexSize = 12
)

type asset struct {
	body, gz []byte
	hash     string // first hex digits of the body's SHA-256
	ctype    string
}

// assets maps a name under /static/ ("css/app.css") to its asset.
type assets map[string]*asset

// loadAssets reads every file of fsys once.
func loadAssets(fsys fs.FS) (assets, error) {
	out := assets{}
	if fsys == nil {
		return out, nil
	}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		a := &asset{body: body, hash: hex.EncodeToString(sum[:])[:assetHashHexSize], ctype: mime.TypeByExtension(path.Ext(name))}
		if a.ctype == "" {
			a.ctype = http.DetectContentType(body)
		}
		if a.gz, err = gzipOnce(body); err != nil {
			return fmt.Errorf("gzip %s: %w", name, err)
		}
		out[name] = a
		return nil
	})
	return out, err
}

// gzipOnce compresses body at the best level, or returns nil when that does
// not pay (images, tiny files).
func gzipOnce(body []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(body); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if float64(buf.Len()) >= minGzipSaving*float64(len(body)) {
		return nil, nil
	}
	return buf.Bytes(), nil
}

// URLs maps each asset's name to its versioned URL, for the layout.
func (as assets) URLs() map[string]string {
	out := make(map[string]string, len(as))
	for name, a := range as {
		out[name] = "/static/" + name + "?v=" + a.hash
	}
	return out
}

// serve is GET and HEAD /static/*.
func (as assets) serve(c echo.Context) error {
	a, ok := as[c.Param("*")]
	if !ok {
		return echo.ErrNotFound
	}
	h := c.Response().Header()
	if c.QueryParam("v") == a.hash {
		h.Set(echo.HeaderCacheControl, immutableCache)
	} else {
		h.Set(echo.HeaderCacheControl, revalidateCache)
	}
	h.Set(echo.HeaderContentType, a.ctype)
	body, etag := a.body, `"`+a.hash+`"`
	if a.gz != nil {
		h.Add(echo.HeaderVary, echo.HeaderAcceptEncoding)
		if acceptsGzip(c.Request()) {
			body, etag = a.gz, `"`+a.hash+`-gz"`
			h.Set(echo.HeaderContentEncoding, "gzip")
		}
	}
	h.Set("ETag", etag)
	// ServeContent answers HEAD without a body, If-None-Match with 304 and
	// Range requests, and sets Content-Length.
	http.ServeContent(c.Response(), c.Request(), "", time.Time{}, bytes.NewReader(body))
	return nil
}

// acceptsGzip reports whether Accept-Encoding lists gzip with a non-zero q.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get(echo.HeaderAcceptEncoding), ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.TrimSpace(coding) != "*" {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}
