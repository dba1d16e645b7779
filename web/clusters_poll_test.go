package web

import (
	"context"
	"fmt"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/clusterdeck/clusterdeck/models"
	"github.com/clusterdeck/clusterdeck/models/modelstest"
)

// L4, L7, B6, L8: the cluster list polls while anything is
// under way on one of its clusters — starting, stopping, resuming or
// terminating — and stops polling when nothing is, as the cluster says
// (Cluster.UnderWay).
func TestClusterListPollsThroughStopAndResume(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("poll@example.com", "Poll")
		c := app.login(acc)
		cl := launchWorkload(t, app, acc, "poller", "none", nil)
		polls := func() bool {
			t.Helper()
			rows := doc(t, c.get("/clusters")).Find(`[data-testid=cluster-rows]`)
			if rows.Length() != 1 {
				t.Fatalf("%d cluster-rows", rows.Length())
			}
			_, ok := rows.Attr("hx-get")
			return ok
		}
		set := func(what string, cols map[string]any, want bool) {
			t.Helper()
			if err := app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(cols).Error; err != nil {
				t.Fatal(err)
			}
			if got := polls(); got != want {
				t.Errorf("%s: the list polls = %v, want %v", what, got, want)
			}
		}
		now := app.store.Now()
		set("provisioning", map[string]any{}, true)
		set("ready", map[string]any{"status": models.StatusReady, "ready_at": now}, false)
		if _, err := app.store.RequestStop(ctx, acc.org.ID, cl.ID, models.StopByBalance, "The balance ran out."); err != nil {
			t.Fatal(err)
		}
		set("stopping", map[string]any{}, true)
		set("stopped", map[string]any{"status": models.StatusStopped, "stop_requested_at": nil, "stopped_at": now}, false)
		set("resuming", map[string]any{"resume_requested_at": now, "resume_started_at": now}, true)
		set("stopping a failed resume's machines", map[string]any{"resume_requested_at": nil, "resume_started_at": nil,
			"stop_requested_at": now.Add(time.Minute)}, true)
		set("stopped again", map[string]any{"stop_requested_at": nil}, false)
		set("terminating", map[string]any{"terminate_requested_at": now}, true)
		set("terminated", map[string]any{"status": models.StatusTerminated}, false)
	})
}

// The clusters list and a live cluster page refresh every 3 s unless the
// server's Config.PagePoll says otherwise (the browser tests poll faster).
func TestPagePollInterval(t *testing.T) {
	modelstest.Each(t, func(t *testing.T, db *gorm.DB) {
		for _, tc := range []struct {
			every time.Duration
			want  string
		}{{0, "every 3s"}, {400 * time.Millisecond, "every 400ms"}, {2 * time.Second, "every 2s"}} {
			app := newTestAppWith(t, db, func(d *Deps) { d.Config.PagePoll = tc.every })
			acc := app.signupAccount(fmt.Sprintf("poll%d@example.com", tc.every.Milliseconds()), "Poll")
			c := app.login(acc)
			cl := launchWorkload(t, app, acc, "poller", "none", nil)
			if got := doc(t, c.get("/clusters")).Find(`#cluster-rows`).AttrOr("hx-trigger", ""); got != tc.want {
				t.Errorf("PagePoll %v: the clusters list's hx-trigger = %q, want %q", tc.every, got, tc.want)
			}
			if got := doc(t, c.get("/clusters/"+cl.ID)).Find(`#cluster-live`).AttrOr("hx-trigger", ""); got != tc.want {
				t.Errorf("PagePoll %v: the cluster page's hx-trigger = %q, want %q", tc.every, got, tc.want)
			}
		}
	})
}
