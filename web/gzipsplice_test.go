package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// O3: the offers page and its htmx partial, gzipped by
// splicing the kept results' deflate blocks between the per-request ones,
// and the offers API's JSON, inflate (as one strict gzip member, its CRC-32 and length checked) to the
// very bytes the same visitor gets uncompressed — the first gzip request
// (which compresses the kept results) and the next (which reuses them).
func TestOffersGzipSplicedEqualsPlain(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		app.seedOffers(manyOffers(200)...)
		const path = "/offers?accelerator=H100_80GB&nodes=4&gpus_per_node=any"
		first := app.get(path)
		var cookies []string
		for _, ck := range first.Result().Cookies() {
			cookies = append(cookies, ck.Name+"="+ck.Value)
		}
		cookie := ""
		for i, ck := range cookies {
			if i > 0 {
				cookie += "; "
			}
			cookie += ck
		}
		for _, hx := range []string{"", "true", "json"} {
			path := path
			if hx == "json" {
				path, hx = "/v1/gpu/offers?accelerator=H100_80GB&nodes=4", ""
			}
			plain := app.get(path, "Cookie", cookie, "HX-Request", hx)
			if plain.Code != http.StatusOK || plain.Header().Get("Content-Encoding") != "" {
				t.Fatalf("htmx %q: plain answer %d, encoding %q", hx, plain.Code, plain.Header().Get("Content-Encoding"))
			}
			for round := range 2 {
				// Past the contract check, which reads bodies as JSON.
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.Header.Set("Cookie", cookie)
				req.Header.Set("HX-Request", hx)
				req.Header.Set("Accept-Encoding", "gzip")
				rec := httptest.NewRecorder()
				app.e.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK || rec.Result().Header.Get("Content-Encoding") != "gzip" || rec.Header().Get("Content-Encoding") != "gzip" {
					t.Fatalf("htmx %q round %d: %d, encoding %q %v %d", hx, round, rec.Code, rec.Header().Get("Content-Encoding"), rec.Header(), rec.Body.Len())
				}
				if ct := rec.Header().Get("Content-Type"); ct != plain.Header().Get("Content-Type") {
					t.Errorf("%s htmx %q: Content-Type %q, plain %q", path, hx, ct, plain.Header().Get("Content-Type"))
				}
				zr, err := gzip.NewReader(bytes.NewReader(rec.Body.Bytes()))
				if err != nil {
					t.Fatal(err)
				}
				zr.Multistream(false)
				got, err := io.ReadAll(zr)
				if err != nil {
					t.Fatalf("htmx %q round %d: inflating: %v", hx, round, err)
				}
				if !bytes.Equal(got, plain.Body.Bytes()) {
					t.Errorf("htmx %q round %d: inflated %d bytes differ from the plain %d", hx, round, len(got), plain.Body.Len())
				}
				if rec.Body.Len() > plain.Body.Len()/3 {
					t.Errorf("htmx %q: %d bytes gzipped of %d: not compressed", hx, rec.Body.Len(), plain.Body.Len())
				}
			}
		}
	})
}
