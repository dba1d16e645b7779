package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

func recoveryPolicyCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	cl := f.cluster(t, "atomic-policy", map[string]any{"status": models.StatusReady, "ready_at": f.app.clock.Now()})
	return func() int {
			return f.api(http.MethodPut, "/v1/gpu/clusters/"+cl.ID+"/recovery", `{"mode":"restart","maxAttempts":3,"cooldownMinutes":5}`)
		},
		func() bool { return f.clusterNow(t, cl.ID).RecoveryMode == models.RecoveryRestart }
}

func recoverNowCase(t *testing.T, f *useCaseFixture) (func() int, func() bool) {
	cl := f.cluster(t, "atomic-recover", map[string]any{"status": models.StatusDegraded, "ready_at": f.app.clock.Now(),
		"episode_started_at": f.app.clock.Now(), "degraded_from": "ready", "last_error": "node_down:node-1: stopped"})
	return func() int { return f.post("/clusters/"+cl.ID+"/recover", nil) },
		func() bool { return f.clusterNow(t, cl.ID).RecoverRequestedAt != nil }
}

// R3: PUT …/recovery validates every field (422 with field errors, nothing
// changed), rejects unknown, repeated and mistyped fields (422 naming the
// field, API2), and sets the policy shown in the
// cluster's recovery object. R5: POST …/recover needs a machine down.
func TestRecoveryAPI(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Acme")
		tok := apiKeyFor(t, app, owner)
		cl := launchFor(t, app, owner, "train")
		app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusReady, "ready_at": app.clock.Now()})
		path := "/v1/gpu/clusters/" + cl.ID + "/recovery"

		code, out := apiJSON(t, app, http.MethodPut, path, tok, `{"mode":"reboot","maxAttempts":11,"cooldownMinutes":0}`)
		fields, _ := out["error"].(map[string]any)["fields"].(map[string]any)
		if code != http.StatusUnprocessableEntity || len(fields) != 3 || fields["mode"] == nil || fields["maxAttempts"] == nil || fields["cooldownMinutes"] == nil {
			t.Fatalf("bad policy: %d %v", code, out)
		}
		if code, _ := apiJSON(t, app, http.MethodPut, path, tok, `{"mode":"restart","maxAttempts":3}`); code != http.StatusUnprocessableEntity {
			t.Errorf("missing cooldown: %d", code)
		}
		for body, field := range map[string]string{
			`{"mode":"restart","maxAttempts":3,"cooldownMinutes":5,"x":1}`:           "x",
			`{"mode":"restart","maxAttempts":3,"maxAttempts":4,"cooldownMinutes":5}`: "maxAttempts",
			`{"mode":"restart","maxAttempts":"3","cooldownMinutes":5}`:               "maxAttempts",
		} {
			code, out := apiJSON(t, app, http.MethodPut, path, tok, body)
			fields, _ := out["error"].(map[string]any)["fields"].(map[string]any)
			if code != http.StatusUnprocessableEntity || fields[field] == nil {
				t.Errorf("%s: %d %v, want 422 naming %s", body, code, out, field)
			}
		}
		if got, _ := app.store.ClusterByID(context.Background(), cl.ID); got.RecoveryMode != "" {
			t.Fatalf("a refused policy changed the cluster: %q", got.RecoveryMode)
		}
		code, out = apiJSON(t, app, http.MethodPut, path, tok, `{"mode":"restart","maxAttempts":3,"cooldownMinutes":5}`)
		rec, _ := out["recovery"].(map[string]any)
		if code != http.StatusOK || rec["mode"] != "restart" || rec["maxAttempts"] != float64(3) || rec["cooldownMinutes"] != float64(5) {
			t.Fatalf("set policy: %d %v", code, out)
		}

		code, out = apiJSON(t, app, http.MethodPost, "/v1/gpu/clusters/"+cl.ID+"/recover", tok, "")
		if code != http.StatusConflict || out["error"].(map[string]any)["code"] != "nothing_to_recover" {
			t.Errorf("recover a healthy cluster: %d %v", code, out)
		}
		app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusDegraded,
			"episode_started_at": app.clock.Now(), "degraded_from": "ready"})
		code, out = apiJSON(t, app, http.MethodPost, "/v1/gpu/clusters/"+cl.ID+"/recover", tok, "")
		if rec, _ := out["recovery"].(map[string]any); code != http.StatusAccepted || rec["recoverNowRequested"] != true {
			t.Errorf("recover now: %d %v", code, out)
		}
	})
}

// R3, R4: the cluster page shows the recovery panel; the form refuses bad
// input with its field problems (422, nothing changed) and saves good
// input; "recover now" shows only while a machine is down.
func TestRecoveryPanelOnPage(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Acme")
		c := app.login(owner)
		cl := launchFor(t, app, owner, "train")
		app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusReady, "ready_at": app.clock.Now()})

		d := doc(t, c.get("/clusters/"+cl.ID))
		if d.Find(`[data-testid=recovery-form]`).Length() != 1 || d.Find(`[data-testid=recover-now]`).Length() != 0 {
			t.Fatal("a ready cluster should show the policy form and no recover-now button")
		}
		rec := c.post("/clusters/"+cl.ID+"/recovery", url.Values{"mode": {"restart"}, "maxAttempts": {"0"}, "cooldownMinutes": {"five"}})
		if rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("bad form: %d", rec.Code)
		}
		d = doc(t, rec)
		if d.Find(`[data-testid=problem-maxAttempts]`).Length() != 1 || d.Find(`[data-testid=problem-cooldownMinutes]`).Length() != 1 {
			t.Error("the field problems are not shown")
		}
		if got, _ := app.store.ClusterByID(context.Background(), cl.ID); got.RecoveryMode != "" {
			t.Fatal("a refused form changed the policy")
		}
		rec = c.post("/clusters/"+cl.ID+"/recovery", url.Values{"mode": {"restart"}, "maxAttempts": {"4"}, "cooldownMinutes": {"10"}})
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("good form: %d %s", rec.Code, rec.Body)
		}
		if got, _ := app.store.ClusterByID(context.Background(), cl.ID); got.Policy() != (models.RecoveryPolicy{Mode: "restart", MaxAttempts: 4, CooldownMinutes: 10}) {
			t.Errorf("policy %+v", got.Policy())
		}
		app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusDegraded,
			"episode_started_at": app.clock.Now(), "degraded_from": "ready", "recovery_attempts": 1,
			"recovery_outcome": `[{"node":"node-1","outcome":"skipped","message":"the provider cannot bring it back"}]`})
		d = doc(t, c.get("/clusters/"+cl.ID))
		if d.Find(`[data-testid=recover-now]`).Length() != 1 {
			t.Error("no recover-now button on a cluster with a machine down")
		}
		if o := d.Find(`[data-testid=recovery-outcome][data-node=node-1]`); o.AttrOr("data-outcome", "") != "skipped" {
			t.Error("the last attempt's outcome is not shown")
		}
		if got := d.Find(`[data-testid=recovery-episode]`).Text(); !strings.Contains(got, "attempts 1 of 4") {
			t.Errorf("episode line %q", got)
		}
		if d.Find(`[data-testid=recovery-paused]`).Length() != 0 {
			t.Error("a paused line on a cluster that is not damped")
		}
		// X14: health damping's pause is said on the page.
		app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Update("damped_at", app.clock.Now())
		d = doc(t, c.get("/clusters/"+cl.ID))
		if got := d.Find(`[data-testid=recovery-paused]`).Text(); !strings.Contains(got, "Automatic repair paused since") ||
			!strings.Contains(got, "too many machines are unhealthy at once") {
			t.Errorf("paused line %q", got)
		}
		if rec := c.post("/clusters/"+cl.ID+"/recover", nil); rec.Code != http.StatusSeeOther {
			t.Errorf("recover now: %d", rec.Code)
		}
	})
}

// X10: the operators' leaks page lists each leaked machine with when it was
// found and released; customers get 403.
func TestAdminLeaksPage(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		cust := app.signupAccount("cust@example.com", "Acme")
		op := app.signupAccount("op@example.com", "Ops")
		if _, err := app.store.SetOperator(ctx, op.user.Email, true); err != nil {
			t.Fatal(err)
		}
		if rec := app.login(cust).get("/admin/leaks"); rec.Code != http.StatusForbidden {
			t.Errorf("customer: %d", rec.Code)
		}
		oc := app.login(op)
		if d := doc(t, oc.get("/admin/leaks")); d.Find(`[data-testid=admin-leaks-empty]`).Length() != 1 {
			t.Error("no empty state")
		}
		if err := app.store.RecordLeaks(ctx, []models.ProviderLeak{{ClusterID: "cl_x", OrgID: cust.org.ID, Provider: "sim",
			GroupName: "cl_x", NodeID: "sim-abc", State: "running"}}); err != nil {
			t.Fatal(err)
		}
		d := doc(t, oc.get("/admin/leaks"))
		if row := d.Find(`[data-testid=leak-row][data-machine=sim-abc]`); row.Length() != 1 || !strings.Contains(row.Find(`[data-testid=leak-released]`).Text(), "not yet") {
			t.Errorf("leak row missing or released: %q", row.Text())
		}
		if err := app.store.MarkLeaksReleased(ctx, "cl_x"); err != nil {
			t.Fatal(err)
		}
		d = doc(t, oc.get("/admin/leaks"))
		if got := d.Find(`[data-testid=leak-released]`).Text(); strings.Contains(got, "not yet") || strings.TrimSpace(got) == "" {
			t.Errorf("released column %q", got)
		}
	})
}
