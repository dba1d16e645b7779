package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/clusterdeck/clusterdeck/static"
)

// The page links every asset by a content-hashed URL, which is cached for
// good; the gzipped copy made at start-up is served as is (O3).
func TestStaticAssetsVersionedImmutableAndGzippedOnce(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	stored, err := loadAssets(static.FS)
	if err != nil {
		t.Fatal(err)
	}
	links := doc(t, app.get("/offers")).Find(`link[rel=stylesheet], script[src]`)
	if links.Length() != 4 {
		t.Fatalf("the layout links %d assets, want 4", links.Length())
	}
	links.Each(func(_ int, s *goquery.Selection) {
		u := s.AttrOr("href", s.AttrOr("src", ""))
		name, version, ok := strings.Cut(strings.TrimPrefix(u, "/static/"), "?v=")
		if !ok || len(version) != assetHashHexSize {
			t.Fatalf("asset URL %q is not versioned by content", u)
		}
		want, err := fs.ReadFile(static.FS, name)
		if err != nil {
			t.Fatal(err)
		}

		plain := app.get(u)
		if plain.Code != 200 || !bytes.Equal(plain.Body.Bytes(), want) || plain.Header().Get("Content-Encoding") != "" {
			t.Fatalf("GET %s without gzip: %d, encoding %q, %d bytes (want the file's %d)", u, plain.Code, plain.Header().Get("Content-Encoding"), plain.Body.Len(), len(want))
		}
		if cc := plain.Header().Get("Cache-Control"); cc != immutableCache {
			t.Errorf("GET %s: Cache-Control %q, want %q", u, cc, immutableCache)
		}

		gz := app.get(u, "Accept-Encoding", "br, gzip")
		if gz.Header().Get("Content-Encoding") != "gzip" || !strings.Contains(gz.Header().Get("Vary"), "Accept-Encoding") {
			t.Fatalf("GET %s with gzip: encoding %q, vary %q", u, gz.Header().Get("Content-Encoding"), gz.Header().Get("Vary"))
		}
		if !bytes.Equal(gz.Body.Bytes(), stored[name].gz) {
			t.Errorf("GET %s: the body is not the copy gzipped at start-up (compressed again per request?)", u)
		}
		if got := gunzip(t, gz.Body.Bytes()); !bytes.Equal(got, want) {
			t.Errorf("GET %s: gunzipped body differs from the file", u)
		}
		if gz.Header().Get("ETag") == plain.Header().Get("ETag") {
			t.Errorf("GET %s: gzip and identity share the ETag %s", u, gz.Header().Get("ETag"))
		}

		again := app.get(u, "Accept-Encoding", "gzip", "If-None-Match", gz.Header().Get("ETag"))
		if again.Code != http.StatusNotModified || again.Body.Len() != 0 {
			t.Errorf("GET %s with its ETag: %d, %d bytes, want 304 and no body", u, again.Code, again.Body.Len())
		}
	})
}

// HEAD answers like GET without the body (it answered 405).
func TestStaticAssetsAnswerHEAD(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	want, _ := fs.ReadFile(static.FS, "css/app.css")
	rec := app.do(httptest.NewRequest(http.MethodHead, "/static/css/app.css", nil))
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Fatalf("HEAD: %d with %d bytes, want 200 and no body", rec.Code, rec.Body.Len())
	}
	if cl := rec.Header().Get("Content-Length"); cl != strconv.Itoa(len(want)) {
		t.Errorf("HEAD: Content-Length %q, want %d", cl, len(want))
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/css") {
		t.Errorf("HEAD: Content-Type %q", ct)
	}
}

// An unversioned or stale URL must revalidate: it may outlive a deploy.
func TestStaticAssetsUnversionedRevalidate(t *testing.T) {
	app := newTestApp(t, openSQLite(t))
	for _, u := range []string{"/static/js/app.js", "/static/js/app.js?v=000000000000"} {
		rec := app.get(u)
		if rec.Code != 200 || rec.Header().Get("Cache-Control") != revalidateCache || rec.Header().Get("ETag") == "" {
			t.Errorf("GET %s: %d, Cache-Control %q, ETag %q", u, rec.Code, rec.Header().Get("Cache-Control"), rec.Header().Get("ETag"))
		}
	}
	if rec := app.get("/static/js/nope.js"); rec.Code != http.StatusNotFound {
		t.Errorf("unknown asset: %d, want 404", rec.Code)
	}
}

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"": false, "gzip": true, "br, gzip": true, "gzip;q=0": false, "GZIP; q=0.5": true,
		"deflate": false, "*": true, "identity, gzip ;q=0.000": false,
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Accept-Encoding", header)
		if got := acceptsGzip(r); got != want {
			t.Errorf("Accept-Encoding %q: %v, want %v", header, got, want)
		}
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
