package web

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/providers/sim"
)

// V1, V2, V4, L10 in a browser: create a volume on the Volumes page, launch
// a cluster on it from the row's "Launch on it" (the picker says it is
// pinned to the volume's location), see /shared/volume on the cluster page
// once the cluster is ready, mounted by the real agents on the simulated
// machines (each node's mounts step reported mounted), then add a worker and
// see it join and mount /shared.
func TestBrowserVolumeJourney(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowserFor(t, 3*time.Minute)
	j := newJourney(t)
	app, srv := j.app, j.srv
	acc := app.signupAccount("vera@volumes.example.com", "Volume Research")
	if _, err := app.store.Deposit(context.Background(), acc.org.ID, 1000*models.Micro, "volume-journey", "test"); err != nil {
		t.Fatal(err)
	}
	wait := func(what, js string) { // retried: a navigation interrupts a poll
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			ok, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(5*time.Second)))
			if err == nil && ok {
				return
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				t.Fatalf("waiting for %s: %v", what, err)
			}
		}
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/login"),
		chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, acc.user.Email),
		chromedp.SetValue(`#password`, testPassword),
		clickLive(`#login-form button[type=submit]`),
	); err != nil {
		t.Fatal(err)
	}
	wait("signed in", `location.pathname === '/offers'`)

	locs, err := app.store.VolumeLocations(context.Background())
	if err != nil || len(locs) == 0 {
		t.Fatalf("volume locations %v %v", locs, err)
	}
	// A bad size first: the problem shows beside the field, nothing is made.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/volumes"),
		chromedp.WaitVisible(`#volume-form`),
		chromedp.SetValue(`#name`, "checkpoints"),
		chromedp.SetValue(`#location`, locs[0].Location),
		chromedp.SetValue(`#size_gb`, "lots"),
		clickLive(`#volume-form button[type=submit]`),
	); err != nil {
		t.Fatal(err)
	}
	wait("the size problem", `!!document.querySelector('#problem-size_gb')`)
	if err := chromedp.Do(ctx,
		chromedp.SetValue(`#size_gb`, "500"),
		clickLive(`#volume-form button[type=submit]`),
	); err != nil {
		t.Fatal(err)
	}
	wait("the volume's row", `!!document.querySelector('[data-testid=volume-row]')`)
	vs, err := app.store.VolumesForOrg(context.Background(), acc.org.ID, acc.env.ID)
	if err != nil || len(vs) != 1 || vs[0].Name != "checkpoints" || vs[0].SizeGB != 500 {
		t.Fatalf("volumes %+v %v", vs, err)
	}

	journeyShot(t, ctx, "volumes")
	if err := chromedp.Do(ctx, clickLive(`[data-testid=volume-launch]`)); err != nil {
		t.Fatal(err)
	}
	wait("the pinned picker", `!!document.querySelector('[data-testid=volume-pin]')`)
	pin, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid=volume-pin]').innerText`))
	if !strings.Contains(pin, vs[0].Location) || !strings.Contains(pin, "checkpoints") {
		t.Errorf("the picker's pin says %q", pin)
	}
	if err := chromedp.Do(ctx, clickLive(`[data-testid=launch-link]`)); err != nil {
		t.Fatal(err)
	}
	wait("the launch page", `!!document.querySelector('#launch-form')`)
	journeyShot(t, ctx, "volume-launch")
	storage, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid=storage-current]').innerText`))
	if !strings.Contains(storage, "mounts volume checkpoints") {
		t.Errorf("the launch page's storage says %q", storage)
	}
	if err := chromedp.Do(ctx,
		chromedp.SetValue(`#name`, "on-the-volume"),
		clickLive(`[data-testid=launch-submit]`),
	); err != nil {
		t.Fatal(err)
	}
	wait("the cluster page", `location.pathname.startsWith('/clusters/cl_')`)
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	id := loc[strings.LastIndex(loc, "/")+1:]
	for i := 0; i < 60 && j.cluster(acc.org.ID, id).Status != models.StatusReady; i++ {
		app.clock.Advance(30 * time.Second)
		j.tick()
	}
	if st := j.cluster(acc.org.ID, id).Status; st != models.StatusReady {
		t.Fatalf("the cluster is %s, want ready", st)
	}
	for range 2 { // the agents take the start order and mount; the next heartbeat says so
		app.clock.Advance(10 * time.Second)
		j.tick()
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/clusters/"+id)); err != nil {
		t.Fatal(err)
	}
	wait("the storage panel", `[...document.querySelectorAll('[data-testid=mount-path]')].some(e => e.innerText === '/shared/volume')`)
	mounted := func(n int) string { // every node of n says mounted in the storage panel
		return fmt.Sprintf(`(() => { const s = [...document.querySelectorAll('[data-testid=storage] [data-testid=mount-state]')];
			return s.length === %d && s.every(e => e.dataset.state === 'mounted' && e.innerText.includes('mounted at')); })()`, n)
	}
	wait("every node mounted", mounted(j.cluster(acc.org.ID, id).Nodes))
	journeyShot(t, ctx, "volume-cluster")

	// Add a worker (L10): confirmed in the page's dialog, it
	// joins in place, and once it joined its agent mounts /shared from
	// node-0 like the others; the Storage panel counts it.
	before := j.cluster(acc.org.ID, id).Nodes
	worker := fmt.Sprintf("node-%d", before)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(`[data-testid=add-worker]`), clickLive(`[data-testid=add-worker]`)); err != nil {
		t.Fatal(err)
	}
	wait("the confirmation dialog", `document.getElementById('confirm-dialog').open`)
	if err := chromedp.Do(ctx, clickLive(`[data-testid=confirm-ok]`)); err != nil {
		t.Fatal(err)
	}
	wait(worker+" joining", `!!document.querySelector('[data-node="`+worker+`"][data-status="joining"]')`)
	joined := func() bool {
		nodes, err := app.store.NodesFor(context.Background(), id)
		return err == nil && len(nodes) == before+1 && nodes[before].JoinKind == "" && nodes[before].Status == models.NodeReady
	}
	for i := 0; i < 30 && !joined(); i++ {
		app.clock.Advance(30 * time.Second)
		j.tick()
	}
	wait(worker+" ready in place", `!!document.querySelector('[data-node="`+worker+`"][data-status="ready"]')`)
	for range 2 { // the new worker's agent takes the start order and mounts; the next heartbeat says so
		app.clock.Advance(10 * time.Second)
		j.tick()
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/clusters/"+id)); err != nil {
		t.Fatal(err)
	}
	wait("/shared on every node, the worker too", `[...document.querySelectorAll('[data-testid=mount]')].some(e => e.innerText.includes('/shared on every node'))`)
	wait(worker+" mounted, beside the others", mounted(before+1))
	journeyShot(t, ctx, "volume-cluster-worker")
	if got := j.cluster(acc.org.ID, id); got.Nodes != before+1 || got.Status != models.StatusReady {
		t.Errorf("after the join: %d machines, %s", got.Nodes, got.Status)
	}
	if ran := j.cloud.Ran(j.cluster(acc.org.ID, id).GroupName(), before); !strings.Contains(ranSteps(ran), "mounts") {
		t.Errorf("%s's agent ran %s, no mounts", worker, ranSteps(ran))
	}
	// Leave the page: its log stream would keep the server busy until the browser's deadline.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	if ran := j.cloud.Ran(j.cluster(acc.org.ID, id).GroupName(), 1); !strings.Contains(ranSteps(ran), "mounts") {
		t.Errorf("node-1's agent ran %s, no mounts", ranSteps(ran))
	}
}

func ranSteps(ran []sim.Ran) string {
	var steps []string
	for _, r := range ran {
		steps = append(steps, r.Step)
	}
	return strings.Join(steps, ",")
}
