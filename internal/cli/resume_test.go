package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/clusterdeck/clusterdeck/models"
)

// B6, API3: "clusters resume" resumes a stopped cluster; without the
// balance a launch needs it is refused (exit 3, insufficient_balance) and
// nothing changes; --wait follows the resume and exits 0 once the cluster
// runs again, 1 when the resume failed.
func TestCLIResume(t *testing.T) {
	eachDeck(t, func(t *testing.T, d *deck) {
		ctx := context.Background()
		cl := d.launch(t, "paused")
		d.join(t, cl.ID, 2)
		stop := func() {
			t.Helper()
			if _, err := d.store.RequestStop(ctx, d.org.ID, cl.ID, models.StopByBudget, "budget reached"); err != nil {
				t.Fatal(err)
			}
			if _, err := d.store.MarkStopped(ctx, cl.ID); err != nil {
				t.Fatal(err)
			}
		}
		stop()

		bal, _ := d.store.Balance(ctx, d.org.ID)
		if _, err := d.store.AddLedgerEntry(ctx, models.LedgerEntry{OrgID: d.org.ID, Kind: models.LedgerAdjustment,
			Amount: -bal, IdemKey: "spend-all", Description: "test"}); err != nil {
			t.Fatal(err)
		}
		if _, errOut, code := d.gpu(t, "clusters", "resume", cl.ID); code != 3 || !strings.Contains(errOut, "insufficient_balance") ||
			!strings.Contains(errOut, "/billing") {
			t.Fatalf("resume without balance: exit %d %s", code, errOut)
		}
		if got, _ := d.store.ClusterByID(ctx, cl.ID); got.ResumeRequestedAt != nil {
			t.Fatal("a refused resume changed the cluster")
		}
		if _, err := d.store.Deposit(ctx, d.org.ID, 200*models.Micro, "top-up", "test"); err != nil {
			t.Fatal(err)
		}

		out, errOut, done := d.background(ctx, "clusters", "resume", cl.ID, "--wait", "--poll-interval", "2ms")
		out.waitFor(t, regexp.MustCompile(`Resume accepted for `+cl.ID), done)
		c, _ := d.store.ClusterByID(ctx, cl.ID)
		if _, err := d.store.MarkResumed(ctx, c, nil); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, done, out, errOut); code != 0 {
			t.Fatalf("resume --wait: exit %d %s %s", code, out, errOut)
		}
		mustContain(t, "resume --wait", out.String(), "billing restarts now", "is ready again")

		stop()
		out, errOut, done = d.background(ctx, "clusters", "resume", cl.ID, "--wait", "--poll-interval", "2ms")
		out.waitFor(t, regexp.MustCompile(`Resume accepted for `+cl.ID), done)
		if _, err := d.store.FailResume(ctx, cl.ID, models.StepTimeout(models.StepRunning), "node-1", models.StepRunning, "node-1 was late."); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, done, out, errOut); code != 1 || !strings.Contains(errOut.String(), "resume_failed:timeout:running") {
			t.Fatalf("failed resume --wait: exit %d %s", code, errOut)
		}
	})
}

// B6, API3: "clusters stop" stops a ready cluster (reason customer) and
// with --wait exits 0 once every machine is stopped; where the provider
// cannot stop machines it is refused with the provider's reason and
// nothing changes.
func TestCLIStop(t *testing.T) {
	lambdaCannotStop := func(s *models.Settings) { // as main sets it from the providers (B6)
		s.StopRefusals = map[string]string{"lambda": "This cloud cannot stop a machine: terminate the cluster to end its billing."}
	}
	eachDeckSet(t, lambdaCannotStop, func(t *testing.T, d *deck) {
		ctx := context.Background()
		cl := d.launch(t, "pausable")
		d.join(t, cl.ID, 2)
		out, errOut, done := d.background(ctx, "clusters", "stop", cl.ID, "--wait", "--poll-interval", "2ms")
		out.waitFor(t, regexp.MustCompile(`Stop accepted for `+cl.ID), done)
		if got, _ := d.store.ClusterByID(ctx, cl.ID); got.StopReason != string(models.StopByCustomer) {
			t.Fatalf("stop reason %q, want customer", got.StopReason)
		}
		if _, err := d.store.MarkStopped(ctx, cl.ID); err != nil {
			t.Fatal(err)
		}
		if code := waitExit(t, done, out, errOut); code != 0 {
			t.Fatalf("stop --wait: exit %d %s %s", code, out, errOut)
		}
		mustContain(t, "stop --wait", out.String(), "volume keeps billing", "clusters resume "+cl.ID, "is stopped; compute billing ended")

		other := d.launch(t, "unstoppable")
		d.join(t, other.ID, 2)
		if err := d.store.DB().Model(&models.Cluster{}).Where("id = ?", other.ID).Update("provider", "lambda").Error; err != nil {
			t.Fatal(err)
		}
		if _, errOut, code := d.gpu(t, "clusters", "stop", other.ID); code == 0 || !strings.Contains(errOut, "stop_unsupported") ||
			!strings.Contains(errOut, "cannot stop a machine") {
			t.Fatalf("stop where machines cannot stop: exit %d %s", code, errOut)
		}
		if got, _ := d.store.ClusterByID(ctx, other.ID); got.StopRequestedAt != nil {
			t.Fatal("a refused stop changed the cluster")
		}
	})
}
