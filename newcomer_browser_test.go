package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserNewcomerWalk is the README's first minutes in headless
// Chromium (X13, L5): `serve --demo` with the fake clock, the demo log-in
// it prints, the first offer the picker shows, Launch with the form's
// defaults, and the clock moved a minute at a time as `make walk` does
// (the jobs run on demand instead of on their 5-second ticks) until the
// cluster page shows the cluster ready with its verification passed.
func TestBrowserNewcomerWalk(t *testing.T) {
	t.Parallel()
	ctx := newRootBrowser(t, 3*time.Minute)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &server{url: "http://" + addr, dataDir: t.TempDir()}
	s.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + s.dataDir, "DATA_DIR=" + s.dataDir, "ADDR=" + addr,
		"BASE_URL=" + s.url, "PROVIDERS=sim", "CLUSTERDECK_FAKE_CLOCK=1",
		"SIM_AGENT_EVERY=100ms"} // as startServer: the test waits on the agents' rounds
	s.process = start(t, s.env, "serve", "--demo")
	for deadline := time.Now().Add(90 * time.Second); !strings.Contains(s.out.String(), "\n===="); {
		select {
		case err := <-s.done:
			t.Fatalf("serve --demo exited (%v):\n%s", err, s.out)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no demo log-in after 90 s:\n%s", s.out)
		}
	}
	for _, line := range strings.Split(s.out.String(), "\n") {
		switch k, v, _ := strings.Cut(strings.TrimSpace(line), ": "); k {
		case "email":
			s.email = v
		case "password":
			s.password = v
		case "api_key":
			s.apiKey = v
		}
	}

	// wait polls until js holds; it survives navigations, which interrupt a
	// single chromedp.Poll (as the web package's journeys wait).
	wait := func(what, js string, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			ok, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(within)))
			if err == nil && ok {
				return
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 3000) : ''`))
				t.Fatalf("waiting for %s: %v\npage text:\n%s", what, err, body)
			}
		}
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(s.url+"/login"),
		chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, s.email),
		chromedp.SetValue(`#password`, s.password),
		chromedp.Click(`#login-form button[type=submit]`),
	); err != nil {
		t.Fatal(err)
	}
	wait("the offers page after logging in", `location.pathname === '/offers' && !!document.querySelector('[data-testid=launch-link]')`, 20*time.Second)

	// The first offer the picker shows, as the newcomer sees it.
	offer, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const l = document.querySelector('[data-testid=launch-link]');
		const row = l.closest('[data-offer-id]');
		return (row ? row.dataset.offerId : '?') + ' ' + l.getAttribute('href');
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the picker's first offer: %s", offer)
	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid=launch-link]`)); err != nil {
		t.Fatal(err)
	}
	wait("the launch page", `location.pathname === '/clusters/new' && !!document.querySelector('[data-testid=launch-submit]')`, 20*time.Second)
	if err := chromedp.Do(ctx, chromedp.Click(`[data-testid=launch-submit]`)); err != nil {
		t.Fatal(err)
	}
	wait("the cluster page", `location.pathname.startsWith('/clusters/cl_') && !!document.querySelector('#cluster-live [data-testid=status-badge]')`, 20*time.Second)
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	id := loc[strings.LastIndex(loc, "/")+1:]

	// make walk: a minute at a time; the page updates itself (htmx polls).
	badge := `document.querySelector('#cluster-live [data-testid=status-badge]').dataset.status`
	status, minute := "", 0
	for ; minute < 60; minute++ {
		if status = s.clusterStatus(t, id); status != "provisioning" && status != "installing" && status != "verifying" {
			break
		}
		s.advance(t, 1)
		for _, job := range []string{"provision", "install", "join", "verify"} {
			s.devRun(t, job)
		}
		agentRound(t, s)
	}
	if status != "ready" {
		t.Fatalf("the newcomer's cluster %s (the picker's first offer, %s) is %s after make walk moved the clock %d minutes: %s", id, offer, status, minute,
			s.walkExplain(t, &walkCase{id: id}))
	}
	wait("the ready badge", badge+` === 'ready'`, 20*time.Second)
	wait("the verification passed", `(document.querySelector('[data-testid=verification]') || {dataset: {}}).dataset.state === 'passed'`, 20*time.Second)
	s.stop(t)
}

// newRootBrowser starts headless Chromium for a test of the real binary,
// as web's browser tests do (newBrowserFor): under CI=true a missing
// browser fails the test; elsewhere it skips loudly. within bounds a hung
// test; it is never waited on.
func newRootBrowser(t *testing.T, within time.Duration) context.Context {
	t.Helper()
	path := os.Getenv("CHROMIUM_PATH")
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path != "" {
			break
		}
		if p, err := exec.LookPath(name); err == nil {
			path = p
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("Chromium is not installed: under CI=true browser tests must run (.ci/run installs Debian's chromium)")
		}
		t.Skip("SKIPPING browser test: install Chromium (apt-get install chromium) or set CHROMIUM_PATH")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, within)
	t.Cleanup(func() {
		if t.Failed() {
			if buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil && len(buf) > 0 {
				dir := filepath.Join("testdata", "screenshots")
				_ = os.MkdirAll(dir, 0o755)
				name := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+".png")
				if os.WriteFile(name, buf, 0o644) == nil {
					t.Logf("screenshot: %s", name)
				}
			}
		}
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	return ctx
}
