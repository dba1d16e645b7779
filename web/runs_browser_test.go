package web

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clusterdeck/clusterdeck/models"
)

// X17 in a browser: the runs list and a run's page (its bill and an
// interruption) read whole at 390 and 1440 px without sideways scrolling
// (screenshots).
func TestBrowserRunPages(t *testing.T) {
	t.Parallel() // see newBrowser
	ctx := newBrowserFor(t, time.Minute)
	app := newTestAppWith(t, openSQLite(t), nil)
	srv := httptest.NewServer(app.e)
	t.Cleanup(srv.Close)
	acc := app.signupAccount("runs@deck.example", "Run Labs")
	tok := apiKeyFor(t, app, acc)
	launchFor(t, app, acc, "seed")
	code, r := apiJSON(t, app, "POST", "/v1/runs", tok,
		`{"name":"llama-8b","accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"volumeGb":100,"command":"torchrun --nnodes $NNODES --node_rank $NODE_RANK --master_addr $MASTER_ADDR train.py --config configs/llama-8b-long-context.yaml","resumeCommand":"torchrun --nnodes $NNODES --node_rank $NODE_RANK train.py --resume latest","checkpointDir":"ckpt"}`)
	if code != http.StatusCreated {
		t.Fatalf("submit: %d %v", code, r)
	}
	id := r["id"].(string)
	now := app.store.Now()
	app.db.Create(&models.RunInterruption{RunID: id, OrgID: acc.org.ID, Cause: models.CauseMachineDead, Node: "node-1", Rank: 1,
		Message: "terminated at the provider (instance no longer exists upstream)", FailedAt: now.Add(-45 * time.Second), DetectedAt: now,
		ResumedAt: new(now.Add(5 * time.Minute)), LostSeconds: 42, Replaced: true})
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1440, 900), chromedp.Navigate(srv.URL+"/login"), chromedp.WaitVisible(`#login-form`),
		chromedp.SetValue(`#email`, acc.user.Email), chromedp.SetValue(`#password`, testPassword),
		chromedp.Click(`#login-form button[type=submit]`), chromedp.WaitNotPresent(`#login-form`)); err != nil {
		t.Fatal(err)
	}
	for _, page := range []struct{ path, sel string }{{"/runs", `[data-testid=run-row]`}, {"/runs/" + id, `[data-testid=run-interruption]`}} {
		for _, w := range []int64{1440, 390} {
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, 900), chromedp.Navigate(srv.URL+page.path), chromedp.WaitVisible(page.sel)); err != nil {
				t.Fatal(err)
			}
			if over, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`)); err != nil || over {
				t.Errorf("%s at %d px scrolls sideways (%v)", page.path, w, err)
			}
			saveScreenshot(t, ctx, page.path, w)
		}
	}
}
