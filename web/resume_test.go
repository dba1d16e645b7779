package web

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
)

// stoppedFor launches acc's cluster name and puts it where a balance stop
// leaves it: stopped, every machine stopped, billing ended (B6).
func stoppedFor(t *testing.T, app *testApp, acc account, name string) models.Cluster {
	t.Helper()
	cl := launchFor(t, app, acc, name)
	now := app.clock.Now()
	if err := app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusStopped,
		"ready_at": now, "stopped_at": now, "stopped_from": "ready", "stop_reason": "balance"}).Error; err != nil {
		t.Fatal(err)
	}
	if err := app.db.Model(&models.ClusterNode{}).Where("cluster_id = ?", cl.ID).Update("status", models.NodeStopped).Error; err != nil {
		t.Fatal(err)
	}
	return cl
}

func resumeCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	cl := stoppedFor(t, f.app, f.owner, "atomic-resume")
	return func() int { return f.api(http.MethodPost, "/v1/gpu/clusters/"+cl.ID+"/resume", "") },
		func() bool { return f.clusterNow(t, cl.ID).ResumeRequestedAt != nil }
}

// B6: a stopped cluster's page says why it stopped and offers Resume;
// resuming without the balance a launch needs (L2) is refused with 402
// insufficient_balance, the amount to add and the top-up link, and changes
// nothing; after a top-up it is accepted (202), the cluster stays stopped
// while every machine starts again, and asking again changes nothing.
// Anything but a stopped cluster answers 409 not_stopped.
func TestResumeAPI(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		owner := app.signupAccount("owner@example.com", "Acme")
		tok := apiKeyFor(t, app, owner)
		browser := app.login(owner)
		cl := stoppedFor(t, app, owner, "train")
		running := launchFor(t, app, owner, "other")

		d := doc(t, browser.get("/clusters/"+cl.ID))
		if d.Find(`[data-testid=resume]`).Length() != 1 || !strings.Contains(d.Find(`[data-testid=stop-state]`).Text(), "because the balance ran out") {
			t.Fatalf("stopped page: resume %d, stop line %q", d.Find(`[data-testid=resume]`).Length(), d.Find(`[data-testid=stop-state]`).Text())
		}
		if doc(t, browser.get("/clusters/"+running.ID)).Find(`[data-testid=resume]`).Length() != 0 {
			t.Errorf("a provisioning cluster offers resume")
		}

		// Spend the balance down to $5: a 2 × 8 H100 needs $39.94.
		bal, _ := app.store.Balance(ctx, owner.org.ID)
		if _, err := app.store.AddLedgerEntry(ctx, models.LedgerEntry{OrgID: owner.org.ID, Kind: models.LedgerAdjustment,
			Amount: 5*models.Micro - bal, IdemKey: "spend-down", Description: "test"}); err != nil {
			t.Fatal(err)
		}
		// the provisioning cluster counts against admission too: terminate it
		app.db.Model(&models.Cluster{}).Where("id = ?", running.ID).Update("status", models.StatusTerminated)
		events := func() int64 {
			var n int64
			app.db.Model(&models.ClusterEvent{}).Where("cluster_id = ?", cl.ID).Count(&n)
			return n
		}
		before := events()
		code, out := apiJSON(t, app, http.MethodPost, "/v1/gpu/clusters/"+cl.ID+"/resume", tok, "")
		e, _ := out["error"].(map[string]any)
		if code != http.StatusPaymentRequired || e["code"] != "insufficient_balance" || e["topUpUrl"] != "/billing" ||
			e["shortfall"] != "34.94" || !strings.Contains(e["message"].(string), "Add $34.94 at /billing") {
			t.Fatalf("resume without balance: %d %v", code, out)
		}
		rec := browser.post("/clusters/"+cl.ID+"/resume", nil) // A4: back to the cluster page, said on top
		if rec.Code != http.StatusSeeOther || location(rec) != "/clusters/"+cl.ID {
			t.Fatalf("page resume without balance: %d %q", rec.Code, location(rec))
		}
		if flash := doc(t, browser.get("/clusters/"+cl.ID)).Find(`[data-testid=flash]`).Text(); !strings.Contains(flash, "Add $34.94") {
			t.Fatalf("page resume without balance: flash %q", flash)
		}
		if got, _ := app.store.ClusterByID(ctx, cl.ID); got.ResumeRequestedAt != nil || events() != before {
			t.Fatalf("a refused resume changed something: %+v, %d events (was %d)", got.ResumeRequestedAt, events(), before)
		}

		if _, err := app.store.Deposit(ctx, owner.org.ID, 100*models.Micro, "top-up", "test"); err != nil {
			t.Fatal(err)
		}
		code, out = apiJSON(t, app, http.MethodPost, "/v1/gpu/clusters/"+cl.ID+"/resume", tok, "")
		if code != http.StatusAccepted || out["status"] != "stopped" || out["resumeRequestedAt"] == nil || out["stopReason"] != "balance" {
			t.Fatalf("resume: %d %v", code, out)
		}
		nodes, _ := app.store.NodesFor(ctx, cl.ID)
		for _, n := range nodes {
			if n.Status != models.NodeProvisioning || n.Step != models.StepRunning {
				t.Errorf("%s after the resume request: %s/%s", n.Name, n.Status, n.Step)
			}
		}
		again, out2 := apiJSON(t, app, http.MethodPost, "/v1/gpu/clusters/"+cl.ID+"/resume", tok, "")
		if again != http.StatusAccepted || out2["resumeRequestedAt"] != out["resumeRequestedAt"] {
			t.Errorf("resume again: %d %v", again, out2)
		}
		d = doc(t, browser.get("/clusters/"+cl.ID))
		if d.Find(`[data-testid=resume]`).Length() != 0 || !strings.Contains(d.Find(`[data-testid=stop-state]`).Text(), "Resuming") {
			t.Errorf("resuming page: resume %d, stop line %q", d.Find(`[data-testid=resume]`).Length(), d.Find(`[data-testid=stop-state]`).Text())
		}

		ready := launchFor(t, app, owner, "ready")
		app.db.Model(&models.Cluster{}).Where("id = ?", ready.ID).Updates(map[string]any{"status": models.StatusReady, "ready_at": app.clock.Now()})
		code, out = apiJSON(t, app, http.MethodPost, "/v1/gpu/clusters/"+ready.ID+"/resume", tok, "")
		if e, _ := out["error"].(map[string]any); code != http.StatusConflict || e["code"] != "not_stopped" {
			t.Errorf("resume a ready cluster: %d %v", code, out)
		}
	})
}

// B1, B6: a cluster terminated after a stop was billed from readyAt to
// the stop only: its page says so and its total cost is that span's.
func TestEndedAfterStopPage(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Acme")
		browser := app.login(owner)
		cl := launchFor(t, app, owner, "paused")
		ready := app.clock.Now()
		stopped, released := ready.Add(90*time.Minute), ready.Add(50*time.Hour)
		if err := app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusTerminated,
			"ready_at": ready, "stopped_at": stopped, "released_at": released, "ended_at": released}).Error; err != nil {
			t.Fatal(err)
		}
		app.clock.Set(released.Add(time.Hour))
		d := doc(t, browser.get("/clusters/"+cl.ID))
		want := models.USD(2 * (cl.MachineHour * 90 / 60))
		if got := d.Find(`[data-testid=ran-for]`).Text(); got != "billed for 1.50 h" {
			t.Errorf("ran for %q, want billed for 1.50 h (ready to stop)", got)
		}
		if got := d.Find(`[data-testid=total-cost]`).Text(); got != want {
			t.Errorf("total cost %q, want %s", got, want)
		}
	})
}
