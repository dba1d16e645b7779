package web

import (
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"
)

// isLocal reports a request made on this machine: its TCP peer is a
// loopback address and it carries no forwarding header. A reverse proxy on
// the same host connects from loopback too, so a request carrying
// X-Forwarded-For, Forwarded, X-Real-IP (or any X-Forwarded-…, or Via) is
// never local, whoever set the header (OP5): /metrics
// without a token and the development routes answer only such requests.
func isLocal(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return false
	}
	return !forwarded(r)
}

// forwarded reports whether a request carries a header a proxy adds.
func forwarded(r *http.Request) bool {
	for name := range r.Header {
		if name == "Forwarded" || name == "X-Real-Ip" || name == "Via" || strings.HasPrefix(name, "X-Forwarded-") {
			return true
		}
	}
	return false
}

// untrustedForwarding logs once, in production, that forwarding headers
// arrive from a peer TRUSTED_PROXIES does not list: they are ignored, so
// every client behind that proxy shares its address (OP5).
type untrustedForwarding struct{ once sync.Once }

func (h *handler) warnUntrustedForwarding(next echo.HandlerFunc) echo.HandlerFunc {
	if !h.Config.Production {
		return next
	}
	return func(c echo.Context) error {
		r := c.Request()
		if forwarded(r) && !h.trustedPeer(r) {
			h.forwardWarning.once.Do(func() {
				h.Log.Warn("a request with forwarding headers came from a peer TRUSTED_PROXIES does not list: the headers are ignored and the peer is the client address; list the reverse proxy in TRUSTED_PROXIES",
					"peer", r.RemoteAddr)
			})
		}
		return next(c)
	}
}

// trustedPeer reports whether the request's TCP peer is in TRUSTED_PROXIES.
func (h *handler) trustedPeer(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	for _, n := range h.Config.TrustedProxies {
		if ip != nil && n.Contains(ip) {
			return true
		}
	}
	return false
}
