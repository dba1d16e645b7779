package web

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"net/http"
	"strconv"
	"sync"

	"github.com/labstack/echo/v4"
)

// A kept answer (the offers results, rendercache.go) is compressed once, not
// on every request: its deflate blocks are kept beside it and spliced into
// each gzip answer between the blocks of what is rendered per request (the
// layout around it, with the visitor's CSRF token). Deflate allows this: a
// run of blocks ended by a sync flush is byte-aligned and does not end the
// stream, and blocks compressed apart never refer to each other's bytes.
// The gzip trailer's CRC-32 and length cover the whole page. O3: compressing the same 40 KB–1 MB on every request was most of the
// page's CPU under load.

// spliceMinKept is the smallest kept answer worth splicing; smaller ones go
// through the gzip middleware like any page.
const spliceMinKept = 1 << 10

// Kept answers are compressed at the gzip middleware's level, once; what is
// rendered per request (a few KB) at the fastest, whose writer resets
// without clearing large tables.
var (
	keptWriters = sync.Pool{New: func() any {
		w, _ := flate.NewWriter(nil, flate.DefaultCompression)
		return w
	}}
	fastWriters = sync.Pool{New: func() any {
		w, _ := flate.NewWriter(nil, flate.BestSpeed)
		return w
	}}
)

// deflateRun appends b to dst as deflate blocks from a writer of pool: ended
// by a sync flush (byte-aligned, the stream goes on) or, when last, by the
// final block.
func deflateRun(dst *bytes.Buffer, pool *sync.Pool, b []byte, last bool) error {
	fw := pool.Get().(*flate.Writer)
	defer pool.Put(fw)
	fw.Reset(dst)
	if _, err := fw.Write(b); err != nil {
		return err
	}
	if last {
		return fw.Close()
	}
	return fw.Flush()
}

// deflatedKept is a kept answer's deflate run, compressed on its first gzip
// request and kept beside it (under the same key, so it lives as long).
func (h *handler) deflatedKept(key string, kept []byte) ([]byte, error) {
	if b, ok := h.renders.get("deflate " + key); ok {
		return b, nil
	}
	var buf bytes.Buffer
	buf.Grow(len(kept) / 4)
	if err := deflateRun(&buf, &keptWriters, kept, false); err != nil {
		return nil, err
	}
	return h.renders.put("deflate "+key, buf.Bytes()), nil
}

// gzipHeader is a gzip member's header: deflate, no name, no time, unknown OS.
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}

// spliceGzip writes one gzip stream of before+kept+after, with kept's
// deflate run as given.
func spliceGzip(dst *bytes.Buffer, before, kept, keptDeflated, after []byte) error {
	dst.Write(gzipHeader)
	if len(before) > 0 {
		if err := deflateRun(dst, &fastWriters, before, false); err != nil {
			return err
		}
	}
	dst.Write(keptDeflated)
	if err := deflateRun(dst, &fastWriters, after, true); err != nil {
		return err
	}
	sum := crc32.Update(crc32.Update(crc32.ChecksumIEEE(before), crc32.IEEETable, kept), crc32.IEEETable, after)
	dst.Write(binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, sum), uint32(len(before)+len(kept)+len(after))))
	return nil
}

// writeSpliced answers with before+kept+after as ctype, gzipped by splicing
// when the client takes gzip and kept is worth it; otherwise as plain bytes
// through the middleware. key is kept's render-cache key.
func (h *handler) writeSpliced(c echo.Context, status int, ctype string, before []byte, key string, kept, after []byte) error {
	gz, _ := c.Get(gzipWriterKey).(http.ResponseWriter)
	unwrap, ok := gz.(interface{ Unwrap() http.ResponseWriter })
	if !ok || gz != c.Response().Writer || len(kept) < spliceMinKept || !acceptsGzip(c.Request()) {
		buf := pageBuffers.Get().(*bytes.Buffer)
		defer putPageBuffer(buf)
		buf.Write(before)
		buf.Write(kept)
		buf.Write(after)
		return c.Blob(status, ctype, buf.Bytes())
	}
	deflated, err := h.deflatedKept(key, kept)
	if err != nil {
		return err
	}
	buf := pageBuffers.Get().(*bytes.Buffer)
	defer putPageBuffer(buf)
	if err := spliceGzip(buf, before, kept, deflated, after); err != nil {
		return err
	}
	// Past the gzip middleware's writer (it compresses what it is given):
	// it adds Vary: Accept-Encoding before the handler runs, and leaves an
	// answer alone whose body did not go through it.
	res := c.Response()
	res.Writer = unwrap.Unwrap()
	c.Set(gzipSplicedKey, true)
	hd := res.Header()
	hd.Set(echo.HeaderContentType, ctype)
	hd.Set(echo.HeaderContentEncoding, "gzip")
	hd.Set(echo.HeaderContentLength, strconv.Itoa(buf.Len()))
	res.WriteHeader(status)
	_, err = res.Write(buf.Bytes())
	return err
}
