package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// make run (`serve --demo`): the demo log-in is printed once the server
// listens, set apart from the logs, with the way to the admin pages, which
// the demo user reaches in development; with the fake clock, moving time
// refreshes the catalog, so a newcomer's offers do not vanish as stale
// (O6).
func TestServeDemo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &server{url: "http://" + addr, dataDir: t.TempDir()}
	s.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.dataDir, "DATA_DIR=" + s.dataDir, "ADDR=" + addr,
		"BASE_URL=" + s.url, "PROVIDERS=sim", "CLUSTERDECK_FAKE_CLOCK=1"}
	p := start(t, s.env, "serve", "--demo")
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(p.out.String(), "\n====") {
		select {
		case err := <-p.done:
			t.Fatalf("serve --demo exited (%v):\n%s", err, p.out)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no demo log-in after 90 s:\n%s", p.out)
		}
	}
	out := p.out.String()
	serving, banner := strings.Index(out, "Clusterdeck is serving on "+addr), strings.Index(out, "\n====")
	if serving < 0 || banner < serving {
		t.Fatalf("the log-in must come after the server listens:\n%s", out)
	}
	block := out[banner:]
	for _, want := range []string{"email: demo@", "password: demo-", "api_key: cdk_", s.url + "/admin", "make walk"} {
		if !strings.Contains(block, want) {
			t.Errorf("the demo block lacks %q:\n%s", want, block)
		}
	}
	for _, line := range strings.Split(block, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ": "); ok && k == "api_key" {
			s.apiKey = v
		}
	}
	u, err := openStore(t, s).UserByEmail(context.Background(), "demo@clusterdeck.local")
	if err != nil || !u.IsOperator {
		t.Errorf("the demo user is not an operator in development: %+v %v", u, err)
	}
	offers := func() int {
		var page struct {
			Count int `json:"count"`
		}
		if code := s.api(t, http.MethodGet, "/v1/gpu/offers?accelerator=H100_80GB&nodes=2", nil, &page); code != http.StatusOK {
			t.Fatalf("offers: %d", code)
		}
		return page.Count
	}
	if offers() == 0 {
		t.Fatal("no offers before the clock moved")
	}
	s.advance(t, 30)
	if n := offers(); n == 0 {
		t.Fatal("after the fake clock moved 30 minutes no offer is startable: the catalog was not refreshed")
	}
}
