package web

import (
	"context"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
)

// L4, L7, B6 (issue 22 item 1): the cluster list polls while anything is
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
