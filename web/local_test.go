package web

import (
	"bytes"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// OP5: a reverse proxy on this host connects from
// loopback, so a request carrying forwarding headers is never local: the
// development mailbox and /metrics without a token refuse it, trusted proxy
// or not; production answers /metrics only with the token, or to direct
// loopback requests with METRICS_LOOPBACK=1.
func TestForwardedRequestsAreNeverLocal(t *testing.T) {
	db := openSQLite(t)
	call := func(app *testApp, path string, headers ...string) int {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.RemoteAddr = "127.0.0.1:40000"
		req.Host = "127.0.0.1:8080"
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		return app.do(req).Code
	}
	proxied := [][]string{
		{"X-Forwarded-For", "203.0.113.9"},
		{"Forwarded", "for=203.0.113.9;proto=https"},
		{"X-Real-IP", "203.0.113.9"},
		{"X-Forwarded-Proto", "https"},
		{"X-Forwarded-For", "127.0.0.1"},
	}
	_, loop, _ := net.ParseCIDR("127.0.0.0/8")
	for name, edit := range map[string]func(*Deps){
		"no trusted proxies": nil,
		"loopback trusted":   func(d *Deps) { d.Config.TrustedProxies = append(d.Config.TrustedProxies, loop) },
	} {
		dev := newTestAppWith(t, db, edit)
		for _, path := range []string{"/dev/mailbox", "/metrics"} {
			if code := call(dev, path); code != http.StatusOK {
				t.Errorf("%s: direct loopback %s: %d, want 200", name, path, code)
			}
			for _, h := range proxied {
				if code := call(dev, path, h...); code != http.StatusForbidden {
					t.Errorf("%s: %s with %s: %v: %d, want 403", name, path, h[0], h[1], code)
				}
			}
		}
	}

	prod := newTestAppWith(t, db, func(d *Deps) { d.Config.Production = true })
	if code := call(prod, "/metrics"); code != http.StatusForbidden {
		t.Errorf("production without METRICS_TOKEN, direct loopback: %d, want 403", code)
	}
	open := newTestAppWith(t, db, func(d *Deps) { d.Config.Production, d.Config.MetricsLoopback = true, true })
	if code := call(open, "/metrics"); code != http.StatusOK {
		t.Errorf("METRICS_LOOPBACK=1, direct loopback: %d, want 200", code)
	}
	if code := call(open, "/metrics", "X-Forwarded-For", "203.0.113.9"); code != http.StatusForbidden {
		t.Errorf("METRICS_LOOPBACK=1, forwarded: %d, want 403", code)
	}
	tok := newTestAppWith(t, db, func(d *Deps) { d.Config.Production, d.Config.MetricsToken = true, "s3cret" })
	if code := call(tok, "/metrics", "X-Forwarded-For", "203.0.113.9", "Authorization", "Bearer s3cret"); code != http.StatusOK {
		t.Errorf("production with the token through a proxy: %d, want 200", code)
	}
	if code := call(tok, "/metrics"); code != http.StatusForbidden {
		t.Errorf("production with a token set, none sent: %d, want 403", code)
	}
}

// OP5: production says once that forwarding headers come from a peer
// TRUSTED_PROXIES does not list.
func TestUntrustedForwardingIsLoggedOnce(t *testing.T) {
	var logs bytes.Buffer
	app := newTestAppWith(t, openSQLite(t), func(d *Deps) {
		d.Config.Production = true
		d.Log = slog.New(slog.NewTextHandler(&logs, nil))
	})
	for range 3 {
		req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		req.RemoteAddr = "127.0.0.1:40000"
		req.Header.Set("X-Forwarded-For", "203.0.113.9")
		app.do(req)
	}
	if n := strings.Count(logs.String(), "TRUSTED_PROXIES does not list"); n != 1 {
		t.Errorf("warned %d times, want once:\n%s", n, logs.String())
	}
}
