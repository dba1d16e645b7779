package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/clusterdeck/clusterdeck/models"
)

// X13: the verifying progress line counts from verification's start, not
// from the launch or the install before it, and says when it gives up (the
// run's deadline); "Billing since" says billing starts at hand-over.
func TestVerifyingProgressCountsFromVerification(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("v@example.com", "Verify")
		c := app.login(acc)
		cl := launchWorkload(t, app, acc, "verify", "slurm", nil)
		app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Update("verify", true)
		placeTwo(t, app, cl)
		for i := range 2 {
			for _, step := range models.ProvisionSteps {
				app.store.MarkNodeStep(ctx, cl.ID, i, step, "ok")
			}
		}
		if _, err := app.store.MarkJoined(ctx, cl.ID, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := app.store.SoftwareRunFor(ctx, mustCluster(t, app, cl.ID)); err != nil {
			t.Fatal(err)
		}
		app.clock.Advance(9 * time.Minute) // the install takes a while
		if got, _ := app.store.MarkSoftwareReady(ctx, cl.ID, 1, "ok", nil); got.Status != models.StatusVerifying {
			t.Fatalf("status %s after the install", got.Status)
		}
		line := func() (string, string, string) {
			t.Helper()
			d := doc(t, c.get("/clusters/"+cl.ID))
			p := d.Find(`[data-testid=progress]`)
			return p.Find(`[data-testid=progress-elapsed]`).Text(), p.Find(`[data-testid=progress-gives-up]`).Text(),
				strings.TrimSpace(d.Find(`[data-testid=ready-at]`).Text())
		}
		if elapsed, givesUp, billing := line(); elapsed != "0:00 elapsed" || givesUp != "" || billing != "at hand-over (verification is not billed)" {
			t.Errorf("before the verify job opened the run: %q, %q, %q", elapsed, givesUp, billing)
		}
		run, err := app.store.VerifyRunFor(ctx, mustCluster(t, app, cl.ID))
		if err != nil {
			t.Fatal(err)
		}
		app.clock.Advance(4 * time.Minute)
		if elapsed, givesUp, _ := line(); elapsed != "4:00 elapsed" || givesUp != "gives up at "+run.Deadline.UTC().Format("15:04") {
			t.Errorf("verifying: %q, %q (deadline %v)", elapsed, givesUp, run.Deadline)
		}
	})
}

func mustCluster(t testing.TB, app *testApp, id string) models.Cluster {
	t.Helper()
	c, err := app.store.ClusterByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// X13: "Run verification again" on a handed-over cluster asks first, in
// the confirm dialog, naming the disruption (every GPU for minutes, the
// start command that runs there); a post without the confirmation runs
// nothing and says why.
func TestVerifyAgainPageConfirmsDisruption(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("w@example.com", "Verify")
		c := app.login(acc)
		cl := launchFor(t, app, acc, "train")
		now := app.clock.Now()
		app.db.Model(&models.Cluster{}).Where("id = ?", cl.ID).Updates(map[string]any{"status": models.StatusReady, "ready_at": now, "verify": true})
		if err := app.db.Create(&models.VerifyRun{ClusterID: cl.ID, OrgID: cl.OrgID, Run: 1, Status: models.VerifyPassed, Round: 1, MaxSwaps: 1,
			StartedAt: now, Deadline: now.Add(25 * time.Minute), FinishedAt: &now, UpdatedAt: now}).Error; err != nil {
			t.Fatal(err)
		}
		if err := app.db.Create(&models.NodeStart{ClusterID: cl.ID, Rank: 0, OrgID: cl.OrgID, Node: "node-0", State: models.StartRunning,
			StartedAt: now, ReportedAt: now}).Error; err != nil {
			t.Fatal(err)
		}
		d := doc(t, c.get("/clusters/"+cl.ID))
		form := d.Find(`[data-testid=verify-again-form]`)
		detail, _ := form.Attr("data-confirm-detail")
		question, _ := form.Attr("data-confirm")
		confirm, _ := form.Find(`input[name=confirm_disruption]`).Attr("value")
		if form.Length() != 1 || question != "Run verification again on train?" || confirm != "true" ||
			!strings.Contains(detail, "every GPU of all 2 machines for about 3 minutes") ||
			!strings.Contains(detail, "the start command running on 1 of its 2 machines slows down, runs out of GPU memory or fails") {
			t.Fatalf("run again form: %d forms, question %q, confirm %q, detail %q", form.Length(), question, confirm, detail)
		}
		rec := c.post("/clusters/"+cl.ID+"/verify", url.Values{})
		if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "Confirm the disruption to run it.") {
			t.Errorf("run again without the confirmation: %d", rec.Code)
		}
		if run, _ := app.store.VerificationFor(ctx, cl.OrgID, cl.ID); run == nil || run.Run != 1 || run.Rerun {
			t.Fatalf("an unconfirmed run again changed the run: %+v", run)
		}
		rec = c.post("/clusters/"+cl.ID+"/verify", url.Values{"confirm_disruption": {"true"}})
		if rec.Code != http.StatusSeeOther && rec.Code != http.StatusFound {
			t.Fatalf("confirmed run again: %d %s", rec.Code, rec.Body)
		}
		if run, _ := app.store.VerificationFor(ctx, cl.OrgID, cl.ID); run == nil || run.Run != 2 || !run.Rerun || run.Status != models.VerifyRunning {
			t.Fatalf("after the confirmed run again: %+v", run)
		}
	})
}

// X13: the launch page says what verification and a swap cost: nothing.
func TestLaunchPageSaysVerificationIsNotBilled(t *testing.T) {
	eachApp(t, func(t *testing.T, app *testApp) {
		ctx := context.Background()
		acc := app.signupAccount("l@example.com", "Launch")
		c := app.login(acc)
		app.seedOffers(testOffer("h100x8", "us-east", 8, 2_490_000, intp(20)))
		if _, err := app.store.Deposit(ctx, acc.org.ID, 500*models.Micro, "test-deposit:launch", "test"); err != nil {
			t.Fatal(err)
		}
		d := doc(t, c.get("/clusters/new?offer=sim:h100x8&nodes=3"))
		got := strings.TrimSpace(d.Find(`[data-testid=launch-verify-billing]`).Text())
		if got != "Verification (about 6 min) and any swap are not billed; billing starts at hand-over (with software, when its install starts)." {
			t.Errorf("launch page: %q", got)
		}
	})
}
