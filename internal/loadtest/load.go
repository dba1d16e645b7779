package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clusterdeck/clusterdeck/web"
	"github.com/labstack/echo/v4"
)

// load is one measurement's shape.
type load struct {
	clients  int
	duration time.Duration
	max      int
	only     string        // pages whose name contains it, at the default catalog ("": all)
	hold     time.Duration // the server's RefusalHold (0: its default)
}

// result is one measurement: every request's latency.
type result struct {
	latencies []time.Duration // sorted
	elapsed   time.Duration
	err       error
}

func (r result) rps() float64 { return float64(len(r.latencies)) / r.elapsed.Seconds() }

// p is the q-th percentile latency.
func (r result) p(q int) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	return r.latencies[min(len(r.latencies)-1, len(r.latencies)*q/100)]
}

// measure runs l.clients clients against url until l.duration passes or
// l.max requests were sent, whichever comes first.
func (l load) measure(ctx context.Context, url string, htmx bool) result {
	client := &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: l.clients, DisableCompression: true,
	}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, l.duration)
	defer cancel()
	var (
		sent     atomic.Int64
		mu       sync.Mutex
		all      []time.Duration
		firstErr error
		wg       sync.WaitGroup
	)
	start := time.Now()
	for range l.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]time.Duration, 0, l.max/l.clients+1)
			var err error
			for ctx.Err() == nil && sent.Add(1) <= int64(l.max) {
				t := time.Now()
				if err = get(ctx, client, url, htmx); err != nil {
					break
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			defer mu.Unlock()
			all = append(all, mine...)
			if err != nil && !errors.Is(err, context.DeadlineExceeded) && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(all)
	return result{latencies: all, elapsed: elapsed, err: firstErr}
}

func get(ctx context.Context, client *http.Client, url string, htmx bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if htmx {
		req.Header.Set("HX-Request", "true")
	}
	// As a browser asks; the body is read as sent (gzip), not inflated.
	req.Header.Set("Accept-Encoding", "gzip")
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, res.Status)
	}
	return nil
}

// server is a handler listening on a loopback port.
type server struct {
	url string
	srv *http.Server
}

func listen(h http.Handler) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &server{url: "http://" + ln.Addr().String(), srv: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}}
	go s.srv.Serve(ln) //nolint:errcheck // Serve returns ErrServerClosed on close
	return s, nil
}

func (s *server) close() { s.srv.Close() }

// bareEcho answers GET /page with body and nothing else but the gzip the
// application compresses its pages with (web.Gzip): no other middleware, no
// database, no rendering. It is the ceiling the page is compared with.
func bareEcho(body []byte, ctype string) http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Use(web.Gzip())
	e.GET("/page", func(c echo.Context) error { return c.Blob(http.StatusOK, ctype, body) })
	return e
}

// fetch returns one response's body and content type, uncompressed.
func (s *server) fetch(ctx context.Context, path string, htmx bool) ([]byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
	if err != nil {
		return nil, "", err
	}
	if htmx {
		req.Header.Set("HX-Request", "true")
	}
	res, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		return nil, "", err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", path, res.Status)
	}
	return body, res.Header.Get("Content-Type"), err
}

// assetLinks finds the stylesheet and scripts a page links.
var assetLinks = regexp.MustCompile(`(?:href|src)="(/static/[^"]+)"`)

// firstVisit is what a browser with an empty cache downloads for path: the
// page and every asset it links, as gzip on the wire.
func (s *server) firstVisit(ctx context.Context, path string) (string, error) {
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	wire := func(p string) (int, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+p, nil)
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Accept-Encoding", "gzip")
		res, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		if err != nil || res.StatusCode != http.StatusOK {
			return 0, nil, fmt.Errorf("GET %s: %s %v", p, res.Status, err)
		}
		body := raw
		if res.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				return 0, nil, err
			}
			if body, err = io.ReadAll(zr); err != nil {
				return 0, nil, err
			}
		}
		return len(raw), body, nil
	}
	n, page, err := wire(path)
	if err != nil {
		return "", err
	}
	total, htmlKB := n, float64(n)/1024
	for _, m := range assetLinks.FindAllSubmatch(page, -1) {
		a, _, err := wire(string(bytes.ReplaceAll(m[1], []byte("&amp;"), []byte("&"))))
		if err != nil {
			return "", err
		}
		total += a
	}
	verdict := "under"
	if total >= 60*1024 {
		verdict = "OVER"
	}
	return fmt.Sprintf("%.1f KB (HTML %.1f KB; %s the 60 KB target)", float64(total)/1024, htmlKB, verdict), nil
}

func gomaxprocs() int { return runtime.GOMAXPROCS(0) }
