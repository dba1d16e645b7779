package webhookout

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRefusesPrivateAddressesAtConnectTime: the client asks its address rule
// about the resolved address at connect time, whether the URL names the IP
// or a host name that resolves to it (as a rebinding name would), and a
// client without a rule connects nowhere (X8).
func TestRefusesPrivateAddressesAtConnectTime(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	var asked []netip.AddrPort
	c := New(Options{Allow: func(ap netip.AddrPort) error { asked = append(asked, ap); return errors.New("not public") }})
	for _, u := range []string{srv.URL, "http://localhost:" + port + "/hook", "http://[::1]:" + port + "/hook", "http://0.0.0.0:" + port} {
		_, err := c.Post(context.Background(), u, nil, []byte(`{}`))
		if !errors.Is(err, ErrRefusedAddress) {
			t.Errorf("POST %s: %v, want the address refused", u, err)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the loopback server was reached %d times", hits.Load())
	}
	if len(asked) < 4 || asked[1].Addr().String() != "127.0.0.1" && asked[1].Addr().String() != "::1" {
		t.Fatalf("the rule was asked about %v, want every resolved address", asked)
	}
	if _, err := New(Options{}).Post(context.Background(), srv.URL, nil, nil); !errors.Is(err, ErrRefusedAddress) {
		t.Fatalf("a client without a rule: %v, want refused", err)
	}
	if a, err := New(Options{Allow: allowAll}).Post(context.Background(), srv.URL, nil, nil); err != nil || a.Status != 200 {
		t.Fatalf("allowed loopback: %+v %v", a, err)
	}
}

func allowAll(netip.AddrPort) error { return nil }

// TestNoRedirectBoundedAnswerAndTimeout: a redirect is an answer, never
// followed; only the first 4 KB of an answer are read; a receiver that
// never answers is cut off at the timeout.
func TestNoRedirectBoundedAnswerAndTimeout(t *testing.T) {
	var followed atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/target", http.StatusFound) })
	mux.HandleFunc("/target", func(w http.ResponseWriter, r *http.Request) { followed.Add(1) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(strings.Repeat("é", 100_000))) })
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := New(Options{Allow: allowAll, Timeout: 200 * time.Millisecond})
	ctx := context.Background()
	a, err := c.Post(ctx, srv.URL+"/redirect", nil, nil)
	if err != nil || a.Status != http.StatusFound || followed.Load() != 0 {
		t.Fatalf("redirect: %+v %v, followed %d", a, err, followed.Load())
	}
	a, err = c.Post(ctx, srv.URL+"/big", nil, nil)
	if err != nil || len(a.Excerpt) > MaxAnswer || len(a.Excerpt) < MaxAnswer-4 || !strings.HasPrefix(a.Excerpt, "éé") {
		t.Fatalf("big answer: %d bytes, %v", len(a.Excerpt), err)
	}
	t0 := time.Now()
	if _, err = c.Post(ctx, srv.URL+"/hang", nil, nil); err == nil || time.Since(t0) > 5*time.Second {
		t.Fatalf("hanging receiver: %v after %s", err, time.Since(t0))
	}
}
