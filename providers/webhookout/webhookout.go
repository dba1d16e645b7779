// Package webhookout makes the outbound webhook requests (X8): its own
// client, never the server's, that follows no redirect, bounds the whole
// request, reads at most a few KB of the answer and asks its caller's
// address rule (Options.Allow) about every connection at connect time,
// after DNS, so a name that resolves (or rebinds) to the operator's network
// or to the server itself is never reached. It imports nothing of ours.
package webhookout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// Defaults.
const (
	DefaultTimeout = 10 * time.Second
	MaxAnswer      = 4 << 10 // bytes of an answer read
)

// ErrRefusedAddress is a connection refused by the address check.
var ErrRefusedAddress = errors.New("webhookout: address not allowed")

// Client posts webhook events.
type Client struct {
	http *http.Client
}

// Options configure a Client.
type Options struct {
	// Allow is asked about every address the client is about to connect to
	// (after DNS); an error refuses the connection. Nil refuses them all.
	Allow   func(netip.AddrPort) error
	Timeout time.Duration // whole request; 0 = DefaultTimeout
}

// New builds a client.
func New(o Options) *Client {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	allow := o.Allow
	if allow == nil {
		allow = func(netip.AddrPort) error { return errors.New("no address rule") }
	}
	d := &net.Dialer{Timeout: min(timeout, 5*time.Second), KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err == nil {
				err = allow(ap)
			}
			if err != nil {
				return fmt.Errorf("%w: %s: %v", ErrRefusedAddress, address, err)
			}
			return nil
		}}
	return &Client{http: &http.Client{
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{
			Proxy:                 nil, // a proxy would connect for us, past the address check
			DialContext:           d.DialContext,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			IdleConnTimeout:       90 * time.Second,
			MaxIdleConnsPerHost:   4,
			ForceAttemptHTTP2:     true,
		},
	}}
}

// Answer is what the receiver said.
type Answer struct {
	Status  int
	Excerpt string // the first MaxAnswer bytes of the body, as valid UTF-8
}

// Post sends body to url with header. A redirect is an answer (3xx), not
// followed.
func (c *Client) Post(ctx context.Context, url string, header http.Header, body []byte) (Answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		return Answer{}, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer))
	return Answer{Status: resp.StatusCode, Excerpt: validUTF8(b)}, nil
}

func validUTF8(b []byte) string {
	for len(b) > 0 && !utf8.Valid(b) {
		b = b[:len(b)-1] // a rune cut by the limit
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
