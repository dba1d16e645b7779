package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// X13 through the API: "run verification again" on a ready
// cluster (202, the report running as a run again), refused while it runs
// and on a cluster that is not ready; "keep it as it is" only on a cluster
// degraded by a failed verification.
func TestAPIVerifyAgainAndKeep(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Acme")
		tok := apiKeyFor(t, app, owner)
		cl := launchFor(t, app, owner, "train")
		verify := "/v1/gpu/clusters/" + cl.ID + "/verify"
		keep := "/v1/gpu/clusters/" + cl.ID + "/keep"

		if code, _ := apiJSON(t, app, http.MethodPost, verify, tok, ""); code != http.StatusConflict {
			t.Errorf("verify a provisioning cluster: %d, want 409", code)
		}
		app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusReady, "ready_at": app.clock.Now()})
		if code, _ := apiJSON(t, app, http.MethodPost, keep, tok, ""); code != http.StatusConflict {
			t.Errorf("keep a ready cluster: %d, want 409", code)
		}
		// X13: a handed-over cluster is the customer's; without
		// confirmDisruption the checks do not run and the answer names
		// the disruption.
		for _, body := range []string{"", `{}`, `{"confirmDisruption": false}`} {
			code, out := apiJSON(t, app, http.MethodPost, verify, tok, body)
			e, _ := out["error"].(map[string]any)
			msg, _ := e["message"].(string)
			if code != http.StatusUnprocessableEntity || e["code"] != "confirmation_required" || !strings.Contains(msg, "dcgmi diag") ||
				!strings.Contains(msg, "slows down, runs out of GPU memory or fails") {
				t.Fatalf("verify again with body %q: %d %v", body, code, out)
			}
		}
		if code, out := apiJSON(t, app, http.MethodPost, verify, tok, `{"confirm": true}`); code != http.StatusUnprocessableEntity ||
			out["error"].(map[string]any)["code"] != "validation_failed" {
			t.Errorf("verify again with an unknown field: %d %v", code, out)
		}
		if run, _ := app.store.VerificationFor(context.Background(), cl.OrgID, cl.ID); run != nil {
			t.Fatalf("an unconfirmed run again started a run: %+v", run)
		}
		code, out := apiJSON(t, app, http.MethodPost, verify, tok, `{"confirmDisruption": true}`)
		v, _ := out["verification"].(map[string]any)
		if code != http.StatusAccepted || v["status"] != "running" || v["rerun"] != true || v["run"] != float64(1) {
			t.Fatalf("verify again: %d %v", code, out)
		}
		if code, _ := apiJSON(t, app, http.MethodPost, verify, tok, `{"confirmDisruption": true}`); code != http.StatusConflict {
			t.Errorf("verify again while it runs: %d, want 409", code)
		}
		// X13: the ring's verdict carries the NICs' line rate and the pass
		// mark, so a track record can show "% of line rate".
		rep, _ := json.Marshal(models.VerifyReport{Run: 1, Rerun: true, Status: models.VerifyRunning, Ring: &models.RingVerdict{Status: "passed",
			BusBW: 372.4, ExpectedBusBW: 376, LineRateGBps: 400, FloorBusBW: 319.6, Percent: 99, ThresholdPercent: 85}})
		app.db.Model(&models.VerifyRun{}).Where("cluster_id = ?", cl.ID).Update("report", string(rep))
		_, got := apiJSON(t, app, http.MethodGet, "/v1/gpu/clusters/"+cl.ID, tok, "")
		ring, _ := got["verification"].(map[string]any)["ring"].(map[string]any)
		if ring["lineRateGBps"] != 400.0 || ring["floorBusBwGBps"] != 319.6 || ring["expectedBusBwGBps"] != 376.0 {
			t.Errorf("API ring %v", ring)
		}

		app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusDegraded, "last_error": "verification_failed:fabric"})
		code, out = apiJSON(t, app, http.MethodPost, keep, tok, "")
		if code != http.StatusOK || out["status"] != "ready" || out["lastError"] != nil {
			t.Fatalf("keep: %d %v", code, out)
		}
	})
}

// L4, X5 on the cluster page: a running verification says when it gives
// up and what a swap is given — the replacement's join deadline for the
// machine kind (bare metal booting in 12 minutes: 29) plus the checks.
func TestVerificationPageStatesItsWindow(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Acme")
		cl := launchFor(t, app, owner, "train")
		app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusVerifying,
			"verify": true, "boot_seconds": 720, "machine_kind": "bare_metal"})
		cl, err := app.store.ClusterByID(context.Background(), cl.ID)
		if err != nil {
			t.Fatal(err)
		}
		run, err := app.store.VerifyRunFor(context.Background(), cl)
		if err != nil {
			t.Fatal(err)
		}
		rec := app.login(owner).get("/clusters/" + cl.ID)
		got := strings.TrimSpace(doc(t, rec).Find(`[data-testid=verification-window]`).Text())
		want := "Gives up at " + run.Deadline.UTC().Format("15:04") + " UTC; a swap extends it: the replacement joins within 29 min and the checks take 3 min."
		if got != want {
			t.Errorf("window %q, want %q", got, want)
		}
	})
}
