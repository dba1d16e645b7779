package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// X15, A3, A4: GET/PUT /v1/gpu/clusters/{id}/gpu-watch
// answer the defaults (stall alerts on after 10 minutes, idle rule off),
// refuse out-of-bounds and unknown fields with 422 naming them and change
// nothing, keep fields left out, and answer 404 for another organisation.
func TestGPUWatchAPI(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Acme")
		tok := apiKeyFor(t, app, owner)
		other := apiKeyFor(t, app, app.signupAccount("eve@example.com", "Other"))
		cl := launchFor(t, app, owner, "train")
		app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusReady, "ready_at": app.clock.Now()})
		path := "/v1/gpu/clusters/" + cl.ID + "/gpu-watch"

		code, out := apiJSON(t, app, http.MethodGet, path, tok, "")
		stall, idle := out["stall"].(map[string]any), out["idle"].(map[string]any)
		if code != http.StatusOK || stall["enabled"] != true || stall["minutes"] != float64(10) || idle["enabled"] != false || idle["action"] != "mail" {
			t.Fatalf("defaults: %d %v", code, out)
		}
		for body, field := range map[string]string{
			`{"idle":{"enabled":true,"hours":0}}`:          "idle.hours",
			`{"idle":{"enabled":true,"action":"sleep"}}`:   "idle.action",
			`{"stall":{"minutes":61}}`:                     "stall.minutes",
			`{"idle":{"enabled":true,"graceMinutes":5}}`:   "idle.graceMinutes",
			`{"idle":{"enabled":true,"thresholdPct":"5"}}`: "idle.thresholdPct",
			`{"idle":{"enabled":true},"x":1}`:              "x",
		} {
			code, out := apiJSON(t, app, http.MethodPut, path, tok, body)
			fields, _ := out["error"].(map[string]any)["fields"].(map[string]any)
			if code != http.StatusUnprocessableEntity || fields[field] == nil {
				t.Errorf("%s: %d %v, want 422 naming %s", body, code, out, field)
			}
		}
		if n := app.count(t, &models.GPUWatch{}); n != 0 {
			t.Fatalf("a refused body wrote %d rows", n)
		}
		if code, _ := apiJSON(t, app, http.MethodPut, path, other, `{"idle":{"enabled":true}}`); code != http.StatusNotFound {
			t.Fatalf("another org's cluster: %d", code)
		}
		if code, _ := apiJSON(t, app, http.MethodGet, path, other, ""); code != http.StatusNotFound {
			t.Fatalf("another org's cluster: %d", code)
		}
		code, out = apiJSON(t, app, http.MethodPut, path, tok, `{"idle":{"enabled":true,"hours":3,"action":"stop"}}`)
		stall, idle = out["stall"].(map[string]any), out["idle"].(map[string]any)
		if code != http.StatusOK || idle["enabled"] != true || idle["hours"] != float64(3) || idle["action"] != "stop" ||
			idle["graceMinutes"] != float64(60) || stall["enabled"] != true || !strings.Contains(out["summary"].(string), "then stop the cluster 60 minutes later") {
			t.Fatalf("set: %d %v", code, out)
		}
		code, out = apiJSON(t, app, http.MethodPut, path, tok, `{"stall":{"enabled":false}}`)
		if idle = out["idle"].(map[string]any); code != http.StatusOK || out["stall"].(map[string]any)["enabled"] != false || idle["hours"] != float64(3) {
			t.Fatalf("a field left out kept its value: %d %v", code, out)
		}
	})
}

// X15: the idle rule is a launch option; out of bounds it
// is a 422 naming gpuWatch.idle.… and no cluster is created.
func TestLaunchWithIdleRule(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("l@example.com", "Launchers")
		tok := apiKeyFor(t, app, acc)
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		app.store.Deposit(context.Background(), acc.org.ID, 500*models.Micro, "dep", "test")
		body := func(idle string) string {
			return fmt.Sprintf(`{"offerId":"sim:h100x8","accelerator":"H100_80GB","nodes":2,"gpusPerNode":8,"gpuWatch":{"idle":%s}}`, idle)
		}
		code, out := apiJSON(t, app, http.MethodPost, "/v1/gpu/clusters", tok, body(`{"enabled":true,"hours":99}`), "Idempotency-Key", "w1")
		fields, _ := out["error"].(map[string]any)["fields"].(map[string]any)
		if code != http.StatusUnprocessableEntity || fields["gpuWatch.idle.hours"] == nil || app.count(t, &models.Cluster{}) != 0 {
			t.Fatalf("bad idle rule: %d %v", code, out)
		}
		code, out = apiJSON(t, app, http.MethodPost, "/v1/gpu/clusters", tok, body(`{"enabled":true,"hours":4,"action":"terminate","graceMinutes":30}`), "Idempotency-Key", "w2")
		if code != http.StatusCreated {
			t.Fatalf("launch: %d %v", code, out)
		}
		w, err := app.store.GPUWatchFor(context.Background(), acc.org.ID, out["id"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if p := w.Policy(); !p.IdleOn || p.IdleHours != 4 || p.IdleAction != models.IdleTerminate || p.IdleGraceMinutes != 30 || p.StallOff {
			t.Fatalf("stored %+v", p)
		}
	})
}

// X15: the cluster page shows the watch; the idle rule is said plainly
// when on; a bad form shows the problem beside its field and changes
// nothing.
func TestGPUWatchOnPage(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		owner := app.signupAccount("owner@example.com", "Acme")
		c := app.login(owner)
		cl := launchFor(t, app, owner, "train")
		app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusReady, "ready_at": app.clock.Now()})

		d := doc(t, c.get("/clusters/"+cl.ID))
		if d.Find(`[data-testid=watch-form]`).Length() != 1 || d.Find(`[data-testid=idle-on]`).Length() != 0 {
			t.Fatal("a ready cluster shows the watch form and no idle rule")
		}
		if got := d.Find(`[data-testid=watch-summary]`).Text(); got != "Stall alerts after 10 minutes; idle rule off." {
			t.Errorf("summary %q", got)
		}
		form := url.Values{"stall": {"on"}, "stall_minutes": {"10"}, "idle": {"on"}, "idle_threshold": {"5"}, "idle_hours": {"0"},
			"idle_action": {"stop"}, "idle_grace": {"60"}}
		rec := c.post("/clusters/"+cl.ID+"/gpu-watch", form)
		if rec.Code != http.StatusUnprocessableEntity || doc(t, rec).Find(`[data-testid="problem-idle.hours"]`).Length() != 1 {
			t.Fatalf("bad form: %d", rec.Code)
		}
		if app.count(t, &models.GPUWatch{}) != 0 {
			t.Fatal("a refused form wrote the watch")
		}
		form.Set("idle_hours", "2")
		if rec := c.post("/clusters/"+cl.ID+"/gpu-watch", form); rec.Code != http.StatusSeeOther {
			t.Fatalf("good form: %d %s", rec.Code, rec.Body)
		}
		d = doc(t, c.get("/clusters/"+cl.ID))
		if got := d.Find(`[data-testid=idle-on]`).Text(); !strings.Contains(got, "Idle rule on.") {
			t.Errorf("idle rule line %q", got)
		}
		if got := d.Find(`[data-testid=watch-summary]`).Text(); !strings.Contains(got, "then stop the cluster 60 minutes later") {
			t.Errorf("summary %q", got)
		}
	})
}

func (a *testApp) count(t *testing.T, model any) int64 {
	t.Helper()
	var n int64
	if err := a.db.Model(model).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// X15: the launch page offers the idle rule, off unless
// chosen; hours out of bounds show beside the field and launch nothing; a
// chosen rule is stored with the cluster.
func TestLaunchPageIdleRule(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		acc := app.signupAccount("d@example.com", "Dashboarders")
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		app.store.Deposit(context.Background(), acc.org.ID, 100*models.Micro, "dep", "test")
		c := app.login(acc)
		d := doc(t, c.get("/clusters/new?offer=sim:h100x8&nodes=2"))
		if got := d.Find(`#idle_action option[selected]`).AttrOr("value", "x"); got != "" {
			t.Fatalf("the idle rule is preselected: %q", got)
		}
		form := url.Values{
			"quote_id":   {d.Find(`input[name=quote_id]`).AttrOr("value", "")},
			"form_token": {d.Find(`input[name=form_token]`).AttrOr("value", "")},
			"name":       {"idle-opt-in"}, "software": {"none"}, "idle_action": {"stop"}, "idle_hours": {"0"},
		}
		rec := c.post("/clusters", form)
		if rec.Code != http.StatusUnprocessableEntity || doc(t, rec).Find(`[data-testid="problem-idle.hours"]`).Length() != 1 || app.count(t, &models.Cluster{}) != 0 {
			t.Fatalf("bad hours: %d", rec.Code)
		}
		form.Set("idle_hours", "3")
		rec = c.post("/clusters", form)
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("launch: %d %s", rec.Code, rec.Body)
		}
		id := strings.TrimPrefix(location(rec), "/clusters/")
		w, err := app.store.GPUWatchFor(context.Background(), acc.org.ID, id)
		if p := w.Policy(); err != nil || !p.IdleOn || p.IdleHours != 3 || p.IdleAction != models.IdleStop {
			t.Fatalf("stored %+v (%v)", p, err)
		}
	})
}
