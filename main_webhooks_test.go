package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestAbuseWebhookPosterNeverCallsTheServer: the webhook client as main wires it
// never reaches the server's own listening address, in development too
// (where loopback receivers are allowed), so an endpoint cannot call the
// server's own /dev/clock or admin routes (A3, X8); another loopback
// receiver is reached in development and refused in production.
func TestAbuseWebhookPosterNeverCallsTheServer(t *testing.T) {
	var self, other atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { self.Add(1) }))
	defer srv.Close()
	recv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { other.Add(1) }))
	defer recv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	_, port, _ := strings.Cut(addr, ":")
	for _, production := range []bool{false, true} {
		p := webhookPoster(config{Addr: addr, Production: production})
		for _, u := range []string{srv.URL + "/dev/clock", "http://localhost:" + port + "/dev/jobs/billing/run",
			"http://[::ffff:127.0.0.1]:" + port + "/dev/clock", "http://0.0.0.0:" + port + "/dev/clock"} {
			if _, err := p.Post(context.Background(), u, nil, []byte(`{}`)); err == nil {
				t.Errorf("production=%v: POST %s was sent", production, u)
			}
		}
		_, err := p.Post(context.Background(), recv.URL, nil, []byte(`{}`))
		if production != (err != nil) {
			t.Errorf("production=%v: another loopback receiver: %v", production, err)
		}
	}
	if self.Load() != 0 {
		t.Fatalf("the server's own address was reached %d times", self.Load())
	}
	if other.Load() != 1 {
		t.Fatalf("the development receiver was reached %d times, want 1", other.Load())
	}
}
