package web

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// readyFor launches acc's cluster name and puts it where a hand-over
// leaves it: ready, every machine ready, billed from now.
func readyFor(t testing.TB, app *testApp, acc account, name string) models.Cluster {
	t.Helper()
	cl := launchFor(t, app, acc, name)
	now := app.clock.Now()
	if err := app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusReady,
		"ready_at": now, "placed_at": now}).Error; err != nil {
		t.Fatal(err)
	}
	if err := app.db.Model(&models.ClusterNode{}).Where("cluster_id = ?", cl.ID).Updates(map[string]any{"status": models.NodeReady,
		"step": "done", "running_at": now, "agent_at": now, "mesh_at": now}).Error; err != nil {
		t.Fatal(err)
	}
	cl.Status = models.StatusReady
	return cl
}

func stopCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	cl := readyFor(t, f.app, f.owner, "atomic-stop")
	t.Cleanup(func() { // its machines leave the stock to the cases after it
		f.app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusTerminated, "released_at": f.app.clock.Now()})
	})
	return func() int { return f.api(http.MethodPost, "/v1/gpu/clusters/"+cl.ID+"/stop", "") },
		func() bool { return f.clusterNow(t, cl.ID).StopRequestedAt != nil }
}

// B6, L8: the customer's Stop. A ready cluster's page offers Stop with a
// confirm that says what ends and what keeps billing; the API accepts it
// (202, stopReason customer, an event), asking again changes nothing, the
// page's form goes back to the cluster page; a cluster still starting
// answers 409 not_running, another organisation's 404. Where the provider
// cannot stop machines the page shows Stop off with the provider's reason
// and the API answers 409 stop_unsupported with it, changing nothing.
func TestStopAPI(t *testing.T) {
	lambdaCannotStop := func(s *models.Settings) { // as main sets it from the providers (B6)
		s.StopRefusals = map[string]string{"lambda": "Lambda cannot stop a machine and start it again: terminate the cluster to end its billing."}
	}
	eachAppSet(t, lambdaCannotStop, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		owner := app.signupAccount("owner@example.com", "Acme")
		tok := apiKeyFor(t, app, owner)
		browser := app.login(owner)
		cl := readyFor(t, app, owner, "train")
		starting := launchFor(t, app, owner, "starting")

		d := doc(t, browser.get("/clusters/"+cl.ID))
		form := d.Find(`form[action$="/stop"]`)
		detail, _ := form.Attr("data-confirm-detail")
		style, _ := form.Attr("data-consequence") // not a red destroy: the cluster and its disks stay (views.Changes)
		if form.Find(`[data-testid=stop]`).Length() != 1 || style != "change" ||
			!strings.Contains(detail, "Compute billing ($") || !strings.Contains(detail, "Nothing else bills while it is stopped") {
			t.Fatalf("ready page: stop form %d, style %q, detail %q", form.Length(), style, detail)
		}
		if doc(t, browser.get("/clusters/"+starting.ID)).Find(`[data-testid=stop]`).Length() != 0 {
			t.Errorf("a provisioning cluster offers Stop")
		}

		rival := app.signupAccount("rival@example.com", "Rival")
		if code, _ := apiJSON(t, app, http.MethodPost, "/v1/gpu/clusters/"+cl.ID+"/stop", apiKeyFor(t, app, rival), ""); code != http.StatusNotFound {
			t.Errorf("another organisation's stop: %d", code)
		}
		code, out := apiJSON(t, app, http.MethodPost, "/v1/gpu/clusters/"+starting.ID+"/stop", tok, "")
		if e, _ := out["error"].(map[string]any); code != http.StatusConflict || e["code"] != "not_running" {
			t.Errorf("stop a provisioning cluster: %d %v", code, out)
		}

		code, out = apiJSON(t, app, http.MethodPost, "/v1/gpu/clusters/"+cl.ID+"/stop", tok, "")
		if code != http.StatusAccepted || out["status"] != "ready" || out["stopReason"] != "customer" || out["stopRequestedAt"] == nil {
			t.Fatalf("stop: %d %v", code, out)
		}
		again, out2 := apiJSON(t, app, http.MethodPost, "/v1/gpu/clusters/"+cl.ID+"/stop", tok, "")
		if again != http.StatusAccepted || out2["stopRequestedAt"] != out["stopRequestedAt"] {
			t.Errorf("stop again: %d %v", again, out2)
		}
		evs, _ := app.store.EventsFor(ctx, cl.ID)
		if n := countEvents(evs, "Stop requested (customer): requested by "); n != 1 {
			t.Errorf("%d stop request events, want 1: %+v", n, evs)
		}
		d = doc(t, browser.get("/clusters/"+cl.ID))
		if d.Find(`[data-testid=stop]`).Length() != 0 || !strings.Contains(d.Find(`[data-testid=stop-state]`).Text(), "Stopping as asked") {
			t.Errorf("stopping page: stop %d, stop line %q", d.Find(`[data-testid=stop]`).Length(), d.Find(`[data-testid=stop-state]`).Text())
		}
		if _, err := app.store.MarkStopped(ctx, cl.ID); err != nil {
			t.Fatal(err)
		}
		if d = doc(t, browser.get("/clusters/"+cl.ID)); d.Find(`[data-testid=resume]`).Length() != 1 {
			t.Errorf("a cluster stopped by its customer offers no Resume")
		}

		other := readyFor(t, app, owner, "page-stop")
		if rec := browser.post("/clusters/"+other.ID+"/stop", nil, from("/clusters/"+other.ID)...); rec.Code != http.StatusSeeOther || location(rec) != "/clusters/"+other.ID {
			t.Fatalf("page stop: %d %q", rec.Code, location(rec))
		}
		if got, _ := app.store.ClusterByID(ctx, other.ID); got.StopReason != string(models.StopByCustomer) || got.StopRequestedAt == nil {
			t.Fatalf("page stop: %+v", got.StopRequestedAt)
		}

		lambda := readyFor(t, app, owner, "on-lambda")
		if err := app.db.Model(&models.Cluster{}).Where("id = ?", lambda.ID).Update("provider", "lambda").Error; err != nil {
			t.Fatal(err)
		}
		d = doc(t, browser.get("/clusters/"+lambda.ID))
		btn := d.Find(`button[data-testid=stop]`)
		if _, off := btn.Attr("disabled"); !off || d.Find(`form[action$="/stop"]`).Length() != 0 ||
			!strings.Contains(d.Find(`[data-testid=stop-refused]`).Text(), "Stop is off: Lambda cannot stop a machine") {
			t.Fatalf("page where machines cannot stop: button %d, refused %q", btn.Length(), d.Find(`[data-testid=stop-refused]`).Text())
		}
		code, out = apiJSON(t, app, http.MethodPost, "/v1/gpu/clusters/"+lambda.ID+"/stop", tok, "")
		if e, _ := out["error"].(map[string]any); code != http.StatusConflict || e["code"] != "stop_unsupported" ||
			!strings.Contains(e["message"].(string), "terminate the cluster") {
			t.Fatalf("stop where machines cannot stop: %d %v", code, out)
		}
		if got, _ := app.store.ClusterByID(ctx, lambda.ID); got.StopRequestedAt != nil {
			t.Fatal("a refused stop changed the cluster")
		}
	})
}

func countEvents(evs []models.ClusterEvent, sub string) int {
	n := 0
	for _, e := range evs {
		if strings.Contains(e.Message, sub) {
			n++
		}
	}
	return n
}
