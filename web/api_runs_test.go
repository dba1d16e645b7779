package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

func runCount(t testing.TB, app *testApp) int64 {
	t.Helper()
	var n int64
	if err := app.db.Model(&models.Run{}).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// X17, A3, A4, X19 over the API: bad bodies name their field and store
// nothing; a run quotes, locks the price and launches its cluster with the
// command and CLUSTERDECK_CHECKPOINT_DIR in the env and verification on;
// the Idempotency-Key returns the same run; another organisation gets 404
// and an empty list; the active-run count is bounded.
func TestAPIRuns(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("r@example.com", "Run Labs")
		tok := apiKeyFor(t, app, acc)
		other := app.signupAccount("o@example.com", "Other Labs")
		otherTok := apiKeyFor(t, app, other)
		launchFor(t, app, acc, "seed") // seeds us-east and a deposit
		if _, err := app.store.Deposit(ctx, acc.org.ID, 100_000*models.Micro, "test-deposit:runs", "test"); err != nil {
			t.Fatal(err)
		}
		const shape = `"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"volumeGb":100`
		for _, bad := range []struct{ body, field string }{
			{`{` + shape + `,"checkpointDir":"ckpt"}`, "command"},
			{`{` + shape + `,"command":"python train.py"}`, "checkpointDir"},
			{`{` + shape + `,"command":"python train.py","checkpointDir":"/abs"}`, "checkpointDir"},
			{`{` + shape + `,"command":"python train.py","checkpointDir":"../up"}`, "checkpointDir"},
			{`{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"command":"x","checkpointDir":"ckpt"}`, "volumeGb"},
			{`{` + shape + `,"command":"x","checkpointDir":"ckpt","restartBudget":101}`, "restartBudget"},
			{`{` + shape + `,"command":"x","checkpointDir":"ckpt","finishRule":"any"}`, "finishRule"},
			{`{` + shape + `,"command":"x","checkpointDir":"ckpt","hookUrl":"ftp://x"}`, "hookUrl"},
			{`{` + shape + `,"command":"` + strings.Repeat("x", 4001) + `","checkpointDir":"ckpt"}`, "command"},
			{`{` + shape + `,"command":"x","checkpointDir":"ckpt","env":{"CLUSTERDECK_CHECKPOINT_DIR":"/tmp"}}`, "env"},
			{`{"nodes":2,"offers":["sim:h100x8"],"volumeGb":100,"command":"x","checkpointDir":"ckpt"}`, "maxHourlyPrice"},
		} {
			code, body := apiJSON(t, app, "POST", "/v1/runs", tok, bad.body)
			fields, _ := body["error"].(map[string]any)["fields"].(map[string]any)
			if code != http.StatusUnprocessableEntity || fields[bad.field] == nil {
				t.Errorf("%.120s: %d %v", bad.body, code, body)
			}
		}
		if n := runCount(t, app); n != 0 {
			t.Fatalf("bad bodies stored %d runs", n)
		}
		before := clusterCount(t, app)

		body := `{` + shape + `,"command":"python train.py","resumeCommand":"python train.py --resume latest","checkpointDir":"ckpt","restartBudget":4,"env":{"WANDB_PROJECT":"llama"}}`
		code, r := apiJSON(t, app, "POST", "/v1/runs", tok, body, "Idempotency-Key", "run-1")
		if code != http.StatusCreated || r["status"] != "launching" || r["restartBudget"].(float64) != 4 || r["usdPerHour"] == "" ||
			r["checkpointDir"] != models.SharedVolumeDir+"/ckpt" || r["finishRule"] != "all" {
			t.Fatalf("submit: %d %v", code, r)
		}
		id := r["id"].(string)
		cl, err := app.store.ClusterForOrg(ctx, acc.org.ID, r["clusterId"].(string))
		if err != nil || cl.StartCommand != "python train.py" || !cl.Verify || cl.Env()[models.CheckpointEnv] != models.SharedVolumeDir+"/ckpt" ||
			cl.Env()["WANDB_PROJECT"] != "llama" || cl.VolumeGB != 100 || cl.QuoteID != r["quoteId"] {
			t.Fatalf("its cluster: %+v %v", cl, err)
		}
		if code, again := apiJSON(t, app, "POST", "/v1/runs", tok, body, "Idempotency-Key", "run-1"); code != http.StatusOK || again["id"] != id {
			t.Errorf("same key, same body: %d %v", code, again)
		}
		if code, again := apiJSON(t, app, "POST", "/v1/runs", tok, strings.Replace(body, "restartBudget\":4", "restartBudget\":5", 1),
			"Idempotency-Key", "run-1"); code != http.StatusConflict {
			t.Errorf("same key, other body: %d %v", code, again)
		}
		if got := clusterCount(t, app); got != before+1 {
			t.Errorf("%d clusters launched, want 1", got-before)
		}

		code, got := apiJSON(t, app, "GET", "/v1/runs/"+id, tok, "")
		if code != http.StatusOK || got["id"] != id || got["bill"].(map[string]any)["ettrPercent"] != "0.0" || len(got["interruptions"].([]any)) != 0 {
			t.Errorf("get: %d %v", code, got)
		}
		if code, list := apiJSON(t, app, "GET", "/v1/runs", tok, ""); code != 200 || len(list["runs"].([]any)) != 1 {
			t.Errorf("list: %d %v", code, list)
		}
		if code, _ := apiJSON(t, app, "GET", "/v1/runs/"+id, otherTok, ""); code != http.StatusNotFound {
			t.Errorf("another org's run: %d", code)
		}
		if code, list := apiJSON(t, app, "GET", "/v1/runs", otherTok, ""); code != 200 || len(list["runs"].([]any)) != 0 {
			t.Errorf("another org's list: %d %v", code, list)
		}

		// X19: at most MaxActiveRuns at once; the refused one stores nothing.
		for i := 1; i < models.MaxActiveRuns; i++ {
			if err := app.db.Create(&models.Run{ID: fmt.Sprintf("run_fake%02d", i), OrgID: acc.org.ID, EnvID: acc.env.ID, Status: models.RunRunning,
				ClusterID: "cl_none", CreatedAt: app.store.Now()}).Error; err != nil {
				t.Fatal(err)
			}
		}
		n := runCount(t, app)
		code, refused := apiJSON(t, app, "POST", "/v1/runs", tok, body, "Idempotency-Key", "run-2")
		if code != http.StatusTooManyRequests || errCode(refused) != "rate_limited" || runCount(t, app) != n {
			t.Errorf("over the active-run bound: %d %v", code, refused)
		}
	})
}

// X17 on the dashboard: /runs lists the organisation's runs with status
// and ETTR; /runs/{id} shows the bill and each interruption; another
// organisation's run is 404 (A3).
func TestRunPages(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("p@example.com", "Page Labs")
		tok := apiKeyFor(t, app, acc)
		other := app.signupAccount("q@example.com", "Other Labs")
		launchFor(t, app, acc, "seed")
		if rec := app.login(acc).get("/runs"); rec.Code != 200 || doc(t, rec).Find(`[data-testid=runs-empty]`).Length() != 1 {
			t.Fatalf("empty list: %d", rec.Code)
		}
		code, r := apiJSON(t, app, "POST", "/v1/runs", tok,
			`{"accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"volumeGb":100,"command":"python train.py","resumeCommand":"python train.py --resume latest","checkpointDir":"ckpt"}`)
		if code != http.StatusCreated {
			t.Fatalf("submit: %d %v", code, r)
		}
		id := r["id"].(string)
		now := app.store.Now()
		if err := app.db.Create(&models.RunInterruption{RunID: id, OrgID: acc.org.ID, Cause: models.CauseMachineDead, Node: "node-1", Rank: 1,
			Message: "terminated at the provider", FailedAt: now.Add(-50e9), DetectedAt: now, LostSeconds: 42, Replaced: true}).Error; err != nil {
			t.Fatal(err)
		}
		rec := app.login(acc).get("/runs")
		d := doc(t, rec)
		if rec.Code != 200 || d.Find(`[data-testid=run-row]`).Length() != 1 || d.Find(`[data-testid=run-row] a[href="/runs/`+id+`"]`).Length() != 1 ||
			strings.TrimSpace(d.Find(`[data-testid=run-status]`).Text()) != "launching" {
			t.Fatalf("list: %d\n%s", rec.Code, rec.Body)
		}
		rec = app.login(acc).get("/runs/" + id)
		d = doc(t, rec)
		ints := d.Find(`[data-testid=run-interruption]`)
		if rec.Code != 200 || ints.Length() != 1 || ints.AttrOr("data-cause", "") != "machine_dead" ||
			!strings.Contains(ints.Text(), "Detected after 50s") || !strings.Contains(ints.Text(), "42s of work lost") ||
			d.Find(`[data-testid=run-ettr]`).Length() != 1 || !strings.Contains(d.Find(`[data-testid=run-command]`).Text(), "--resume latest") {
			t.Fatalf("page: %d\n%s", rec.Code, rec.Body)
		}
		if rec := app.login(other).get("/runs/" + id); rec.Code != http.StatusNotFound {
			t.Errorf("another org's run page: %d", rec.Code)
		}
	})
}
